import { DateTime, type DateTimeUnit } from 'luxon';

/**
 * The window a quota policy counts in at an instant. Pure (the clock is the caller's): the strict
 * path and the fast path key their counters by it.
 *
 * - fixed: aligned to the calendar in the policy's zone (UTC when none). A window of N units is
 *   aligned within the next larger unit: minutes within the hour, hours within the day, days
 *   within the month, weeks within the ISO week-year, months within the year; where N does not
 *   divide it, its last window is cut short there (5-hour windows: 00-05, 05-10, ..., 20-24).
 *   Days, weeks and months are the zone's calendar (a day is 23 or 25 hours on a DST change);
 *   minutes and hours are real time counted from the start of their hour or day (the hour that
 *   happens twice on a fall-back day is two windows; a 25-hour day has 25 one-hour windows).
 * - rolling: the last N units before the instant (a month is 30 days), counted in 60 buckets
 *   of a 60th of the window (whole seconds, at least one): a use counts from its bucket until the
 *   whole bucket is older than the window, so for at least the window and at most one bucket more.
 * - lifetime: one window that never ends.
 */
export type WindowUnit = 'minute' | 'hour' | 'day' | 'week' | 'month';

export interface WindowPolicy {
  window_kind: 'fixed' | 'rolling' | 'lifetime';
  window_unit: WindowUnit | null;
  window_size: number | null;
  tz: string | null;
}

export interface Window {
  kind: 'fixed' | 'rolling' | 'lifetime';
  /** Epoch ms; a rolling window's start slides with the instant. 0 for lifetime. */
  startMs: number;
  /** Epoch ms, exclusive; null for lifetime. */
  endMs: number | null;
  /** When its usage is next forgotten as a whole: a fixed window's end; null otherwise. */
  resetsAtMs: number | null;
  /** The counter rows it sums: one for fixed and lifetime, the buckets of a rolling window. */
  keys: string[];
  /** The row a use made now is added to (the last of `keys`). */
  currentKey: string;
  /** When the current row stops counting for any window (the counter sweep deletes it later). */
  currentExpiresMs: number | null;
}

const LARGER: Record<WindowUnit, DateTimeUnit> = {
  minute: 'hour',
  hour: 'day',
  day: 'month',
  week: 'year',
  month: 'year',
};

/** Minutes and hours are real time: a DST change does not make one longer or shorter. */
const REAL_TIME_MS: Partial<Record<WindowUnit, number>> = { minute: 60_000, hour: 3_600_000 };

/** How far into its larger unit (starting at `outer`) a local time is, in whole `unit`s. */
function indexWithin(local: DateTime, outer: DateTime, unit: WindowUnit): number {
  const realMs = REAL_TIME_MS[unit];
  if (realMs) return Math.floor((local.toMillis() - outer.toMillis()) / realMs);
  switch (unit) {
    case 'day':
      return local.day - 1;
    case 'week':
      return local.weekNumber - 1;
    default:
      return local.month - 1;
  }
}

/** `outer` plus `count` units: real time for minutes and hours, the calendar for the rest. */
const advance = (outer: DateTime, unit: WindowUnit, count: number) => {
  const realMs = REAL_TIME_MS[unit];
  return realMs ? outer.plus({ milliseconds: realMs * count }) : outer.plus({ [unit]: count });
};

function fixedWindow(atMs: number, unit: WindowUnit, size: number, zone: string): Window {
  const local = DateTime.fromMillis(atMs, { zone });
  // ISO weeks belong to a week-year; the other units to their calendar's larger unit.
  const outer =
    unit === 'week'
      ? local.startOf('week').set({ weekNumber: 1 }).startOf('week')
      : local.startOf(LARGER[unit]);
  const outerEnd =
    unit === 'week'
      ? outer.plus({ weeks: local.weeksInWeekYear })
      : outer.plus({ [LARGER[unit]]: 1 });
  const first = Math.floor(indexWithin(local, outer, unit) / size) * size;
  const start = advance(outer, unit, first);
  const end = DateTime.min(advance(outer, unit, first + size), outerEnd);
  const startMs = start.toMillis();
  const endMs = end.toMillis();
  return {
    kind: 'fixed',
    startMs,
    endMs,
    resetsAtMs: endMs,
    keys: [String(startMs)],
    currentKey: String(startMs),
    currentExpiresMs: endMs,
  };
}

const UNIT_MS: Record<WindowUnit, number> = {
  minute: 60_000,
  hour: 3_600_000,
  day: 86_400_000,
  week: 7 * 86_400_000,
  month: 30 * 86_400_000,
};
export const ROLLING_BUCKETS = 60;

/** A rolling window's length and bucket width, in ms. */
export function rollingShape(
  unit: WindowUnit,
  size: number,
): { windowMs: number; bucketMs: number } {
  const windowMs = UNIT_MS[unit] * size;
  const bucketMs = Math.max(1_000, Math.round(windowMs / ROLLING_BUCKETS / 1_000) * 1_000);
  return { windowMs, bucketMs };
}

function rollingWindow(atMs: number, unit: WindowUnit, size: number): Window {
  const { windowMs, bucketMs } = rollingShape(unit, size);
  const current = Math.floor(atMs / bucketMs);
  // Every bucket that ends after the window's start still counts.
  const oldest = Math.floor((atMs - windowMs) / bucketMs);
  const keys: string[] = [];
  for (let bucket = oldest; bucket <= current; bucket++) keys.push(`b${bucket}`);
  return {
    kind: 'rolling',
    startMs: atMs - windowMs,
    endMs: atMs,
    resetsAtMs: null,
    keys,
    currentKey: `b${current}`,
    currentExpiresMs: (current + 1) * bucketMs + windowMs,
  };
}

const LIFETIME: Window = {
  kind: 'lifetime',
  startMs: 0,
  endMs: null,
  resetsAtMs: null,
  keys: ['lifetime'],
  currentKey: 'lifetime',
  currentExpiresMs: null,
};

export function windowAt(policy: WindowPolicy, atMs: number): Window {
  if (policy.window_kind === 'lifetime') return LIFETIME;
  const unit = policy.window_unit!;
  const size = policy.window_size ?? 1;
  return policy.window_kind === 'fixed'
    ? fixedWindow(atMs, unit, size, policy.tz ?? 'UTC')
    : rollingWindow(atMs, unit, size);
}
