/**
 * Time-zone arithmetic on top of `Intl.DateTimeFormat` (no dependency, deterministic: every
 * instant is a parameter). All instants are epoch milliseconds.
 */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

export function floorDiv(a: number, b: number): number {
  return Math.floor(a / b);
}

export function mod(a: number, b: number): number {
  return ((a % b) + b) % b;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (valid for any year, unlike Date.UTC). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/**
 * Offset (local wall clock minus UTC, in ms) of `timeZone` at instant `ms`. tzdb offsets and
 * transitions are whole seconds, so the offset is constant within each UTC second.
 */
export function offsetAt(timeZone: string, ms: number): number {
  if (timeZone === 'UTC') return 0;
  const second = Math.floor(ms / 1000) * 1000;
  let year = 0;
  let month = 1;
  let day = 1;
  let hour = 0;
  let minute = 0;
  let sec = 0;
  let bc = false;
  for (const part of formatter(timeZone).formatToParts(second)) {
    switch (part.type) {
      case 'year':
        year = Number(part.value);
        break;
      case 'month':
        month = Number(part.value);
        break;
      case 'day':
        day = Number(part.value);
        break;
      case 'hour':
        hour = Number(part.value) % 24;
        break;
      case 'minute':
        minute = Number(part.value);
        break;
      case 'second':
        sec = Number(part.value);
        break;
      case 'era':
        bc = part.value.startsWith('B');
        break;
      default:
        break;
    }
  }
  if (bc) year = 1 - year;
  const wall = daysFromCivil(year, month, day) * DAY_MS + ((hour * 60 + minute) * 60 + sec) * 1000;
  return wall - second;
}

/** A stretch of UTC time `[start, end)` during which the zone's offset is constant. */
export interface OffsetSegment {
  readonly start: number;
  readonly end: number;
  readonly offset: number;
}

/** Offsets are probed this often; two transitions closer together than this could be missed. */
const PROBE_MS = 6 * HOUR_MS;

/** First whole second in `(lo, hi]` whose offset differs from `offset` (given one in `hi`). */
function findTransition(timeZone: string, lo: number, hi: number, offset: number): number {
  let loS = Math.floor(lo / 1000);
  let hiS = Math.floor(hi / 1000);
  while (hiS - loS > 1) {
    const mid = Math.floor((loS + hiS) / 2);
    if (offsetAt(timeZone, mid * 1000) === offset) loS = mid;
    else hiS = mid;
  }
  return hiS * 1000;
}

/** Splits `[start, end)` into segments of constant offset, exact to the transition second. */
export function offsetSegments(timeZone: string, start: number, end: number): OffsetSegment[] {
  if (timeZone === 'UTC') return [{ start, end, offset: 0 }];
  const segments: OffsetSegment[] = [];
  let segStart = start;
  let offset = offsetAt(timeZone, start);
  let probe = start;
  for (;;) {
    const next = Math.min(probe + PROBE_MS, end);
    const nextOffset = offsetAt(timeZone, next);
    if (nextOffset !== offset) {
      const transition = findTransition(timeZone, probe, next, offset);
      if (transition >= end) break;
      segments.push({ start: segStart, end: transition, offset });
      segStart = transition;
      offset = offsetAt(timeZone, transition);
      probe = transition;
      continue;
    }
    if (next >= end) break;
    probe = next;
  }
  segments.push({ start: segStart, end, offset });
  return segments;
}
