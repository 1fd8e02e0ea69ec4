/** ISO-8601 instant with an explicit UTC offset or Z (rule 5). Seconds and fraction optional. */
const INSTANT_WITH_OFFSET =
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/i;

/** The instant as epoch ms, or null when the text lacks an offset or is not a valid date. */
export function parseInstantWithOffset(text: unknown): number | null {
  if (typeof text !== 'string' || !INSTANT_WITH_OFFSET.test(text)) return null;
  const normalized = text.replace(/([+-]\d{2})(\d{2})$/, '$1:$2');
  const ms = Date.parse(normalized);
  return Number.isNaN(ms) ? null : ms;
}
