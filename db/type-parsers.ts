import type { DriverTypeParser } from '@slonik/driver';

/**
 * Postgres text → JS, chosen so nothing loses precision: int8 and numeric stay strings
 * (money and counters can pass 2^53), timestamps become ISO-8601 UTC strings.
 */
export const typeParsers: DriverTypeParser[] = [
  { name: 'int8', parse: (value) => value },
  { name: 'numeric', parse: (value) => value },
  { name: 'timestamptz', parse: (value) => postgresTimestampToIso(value) },
  { name: 'timestamp', parse: (value) => postgresTimestampToIso(`${value}+00`) },
  { name: 'date', parse: (value) => value },
  { name: 'json', parse: (value) => JSON.parse(value) as unknown },
  { name: 'jsonb', parse: (value) => JSON.parse(value) as unknown },
];

const POSTGRES_TIMESTAMP =
  /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?([+-]\d{2})(?::?(\d{2}))?(?::\d{2})?$/;

/**
 * "2026-11-21 20:01:02.123456+05:30" → "2026-11-21T14:31:02.123Z".
 * Milliseconds are kept, microseconds dropped: services that compare instants round-trip
 * through the API store them at millisecond precision.
 */
export function postgresTimestampToIso(value: string): string {
  if (value === 'infinity' || value === '-infinity') return value;
  const match = POSTGRES_TIMESTAMP.exec(value);
  if (!match) throw new Error(`unexpected timestamp format from Postgres: ${value}`);
  const [, date, time, fraction = '', offsetHours, offsetMinutes = '00'] = match;
  const millis = fraction.padEnd(3, '0').slice(0, 3);
  const parsed = new Date(`${date}T${time}.${millis}${offsetHours}:${offsetMinutes}`);
  if (Number.isNaN(parsed.getTime())) throw new Error(`invalid timestamp from Postgres: ${value}`);
  return parsed.toISOString();
}
