/**
 * ISO-8601 instant with an explicit UTC offset or Z (rule 5): an RFC 3339 date-time, as the
 * OpenAPI document declares `at`, `expires_at` and `effective_at`, and also (as before) without
 * seconds or with an offset without its colon. The fraction may have any length.
 */
const INSTANT_WITH_OFFSET =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(?:Z|([+-])(\d{2}):?(\d{2}))$/i;

const HOURS_MAX = 23;
const MINUTES_MAX = 59;
/** A leap second (RFC 3339 allows :60); counted as the first instant of the next minute. */
const LEAP_SECOND = 60;
const MS_PER_MINUTE = 60_000;
const MS_PER_SECOND = 1000;

/**
 * The instants Postgres and an ISO-8601 answer both hold: UTC years 0001 to 9999. An offset can
 * carry 9999-12-31 into year 10000 (toISOString then writes +010000-..., which Postgres refused:
 * a 500) or 0001-01-01 back into year 0 (no such year in Postgres).
 */
const yearStartMs = (year: number) => new Date(Date.UTC(2000, 0, 1)).setUTCFullYear(year);
const INSTANT_MIN_MS = yearStartMs(1);
const INSTANT_MAX_MS = yearStartMs(10_000) - 1;

/** Year, month, day, hours and minutes of a match. */
type Fields = [number, number, number, number, number];

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Date.parse would move 02-30 to 03-02: a day the month does not have is no date at all. */
export function isCalendarDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const days = month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1]!;
  return day <= days;
}

/** Minutes east of UTC of an offset match (sign, hours, minutes); 0 for Z. */
function offsetMinutes(
  sign: string | undefined,
  hours: string | undefined,
  minutes: string | undefined,
) {
  if (sign === undefined) return 0;
  return (sign === '-' ? -1 : 1) * (Number(hours) * 60 + Number(minutes));
}

/** The instant as epoch ms (the fraction kept to the millisecond), or null when it is not one. */
export function parseInstantWithOffset(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  const match = INSTANT_WITH_OFFSET.exec(text);
  if (!match) return null;
  const [year, month, day, hours, minutes] = match.slice(1, 6).map(Number) as Fields;
  const seconds = Number(match[6] ?? 0);
  const [fraction = '', sign, offsetHours = '0', offsetMinutesText = '0'] = match.slice(7);
  if (!isCalendarDate(year, month, day)) return null;
  if (hours > HOURS_MAX || minutes > MINUTES_MAX || seconds > LEAP_SECOND) return null;
  if (Number(offsetHours) > HOURS_MAX || Number(offsetMinutesText) > MINUTES_MAX) return null;
  // Made on a leap year, then given its own (Date.UTC reads years 0-99 as 1900-1999, and 02-29
  // must not roll over); seconds are added after, so that :60 runs into the next minute.
  const date = new Date(Date.UTC(2000, month - 1, day, hours, minutes));
  date.setUTCFullYear(year);
  const ms = seconds * MS_PER_SECOND + Number(fraction.slice(1, 4).padEnd(3, '0'));
  const instant =
    date.getTime() + ms - offsetMinutes(sign, offsetHours, offsetMinutesText) * MS_PER_MINUTE;
  return instant < INSTANT_MIN_MS || instant > INSTANT_MAX_MS ? null : instant;
}

/**
 * The runs service's instants: UTC with the Z suffix (offsets refused), whole seconds, at most 9
 * fraction digits, no leap second. A JSON Schema pattern, and the route's rule with isUtcInstant.
 */
export const UTC_INSTANT_PATTERN =
  '^(\\d{4})-(\\d{2})-(\\d{2})T(\\d{2}):(\\d{2}):[0-5]\\d(?:\\.\\d{1,9})?Z$';
const UTC_INSTANT = new RegExp(UTC_INSTANT_PATTERN);

/** Text of UTC_INSTANT_PATTERN on a day its month has and a time the day has. */
export function isUtcInstant(text: string): boolean {
  const match = UTC_INSTANT.exec(text);
  if (!match) return false;
  const [year, month, day, hours, minutes] = match.slice(1, 6).map(Number) as Fields;
  return isCalendarDate(year, month, day) && hours <= HOURS_MAX && minutes <= MINUTES_MAX;
}
