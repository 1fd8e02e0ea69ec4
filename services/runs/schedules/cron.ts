/**
 * The cron a schedule accepts: exactly five fields (minute hour day-of-month month
 * day-of-week), each a comma list of `*`, `*∕step`, `n`, `a-b` or `a-b/step` within the field's
 * range; month and day-of-week also by three-letter English names (JAN–DEC, SUN–SAT, any case).
 * Refused (422 invalid_cron): a sixth field (seconds or years), `@` macros and `@every`,
 * `CRON_TZ=`/`TZ=` prefixes (the zone is `timezone`), `?`, `L`, `W`, `#`, `n/step`. Temporal
 * compiles what this accepts; day-of-month and day-of-week both set must both match (Temporal does
 * not implement the classic "or").
 */
export const CRON_FIELDS = 5;
export const CRON_MAX_LENGTH = 256;

interface CronField {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const MONTH_NAMES = [
  'JAN',
  'FEB',
  'MAR',
  'APR',
  'MAY',
  'JUN',
  'JUL',
  'AUG',
  'SEP',
  'OCT',
  'NOV',
  'DEC',
] as const;
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'] as const;

const FIELDS: readonly CronField[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTH_NAMES },
  { name: 'day-of-week', min: 0, max: 6, names: DAY_NAMES },
];

const ITEM = /^(?:(\*)|([0-9A-Za-z]+)(?:-([0-9A-Za-z]+))?)(?:\/([0-9]+))?$/;

/** A value of the field (a number or, where the field has them, a name), or null. */
function valueOf(field: CronField, token: string): number | null {
  if (/^[0-9]{1,2}$/.test(token)) {
    const n = Number(token);
    return n >= field.min && n <= field.max ? n : null;
  }
  const at = field.names?.findIndex((name) => name === token.toUpperCase()) ?? -1;
  return at < 0 ? null : at + field.min;
}

function itemError(field: CronField, item: string): string | null {
  const m = ITEM.exec(item);
  const bad = `${field.name} '${item}' is not *, */step, n, a-b or a-b/step within ${field.min}-${field.max}`;
  if (!m) return bad;
  const [, star, start, end, step] = m;
  if (step !== undefined && (Number(step) < 1 || Number(step) > field.max)) return bad;
  if (star) return null;
  if (step !== undefined && end === undefined) return bad; // n/step: refused
  const a = valueOf(field, start!);
  const b = end === undefined ? a : valueOf(field, end);
  if (a === null || b === null || b < a) return bad;
  return null;
}

/** Why the cron is refused, or null when it is a valid five-field cron. */
export function cronError(cron: string): string | null {
  if (cron.length > CRON_MAX_LENGTH) return `cron must be at most ${CRON_MAX_LENGTH} characters`;
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== CRON_FIELDS || fields[0] === '')
    return `cron must have exactly ${CRON_FIELDS} fields (minute hour day-of-month month day-of-week); no seconds, years or @ macros`;
  for (const [i, field] of FIELDS.entries())
    for (const item of fields[i]!.split(',')) {
      const error = itemError(field, item);
      if (error) return error;
    }
  return null;
}

/** A wall-clock minute, as the cron reads it (day of week 0 = Sunday). */
export interface WallMinute {
  minute: number;
  hour: number;
  day: number;
  month: number;
  weekday: number;
}

/** The values one field of a valid cron names. */
function fieldValues(field: CronField, text: string): Set<number> {
  const values = new Set<number>();
  for (const item of text.split(',')) {
    const [, star, start, end, step] = ITEM.exec(item)!;
    const from = star ? field.min : valueOf(field, start!)!;
    const to = star ? field.max : end === undefined ? from : valueOf(field, end)!;
    for (let v = from; v <= to; v += step === undefined ? 1 : Number(step)) values.add(v);
  }
  return values;
}

/**
 * Whether a wall-clock minute matches a cron that cronError accepts, as Temporal reads it: every
 * field must match (day-of-month and day-of-week both, not either).
 */
export function cronMatcher(cron: string): (wall: WallMinute) => boolean {
  const sets = cron
    .trim()
    .split(/\s+/)
    .map((text, i) => fieldValues(FIELDS[i]!, text));
  const [minute, hour, day, month, weekday] = sets as [Set<number>, ...Set<number>[]];
  return (wall) =>
    minute.has(wall.minute) &&
    hour!.has(wall.hour) &&
    day!.has(wall.day) &&
    month!.has(wall.month) &&
    weekday!.has(wall.weekday);
}
