/**
 * Evaluation of parsed working hours against instants.
 *
 * Semantics: an instant is working time iff the local wall-clock time it shows in the
 * definition's zone (weekday + time of day) falls in one of that weekday's `[start, end)`
 * intervals. Intervals are half-open: the start minute is working, the end minute is not.
 *
 * Daylight-saving transitions follow from that rule:
 * - Spring forward (gap): wall times inside the gap never occur. An interval that starts inside
 *   the gap begins at the transition instant (e.g. Europe/Berlin `sun 02:30 - 04:00` on the
 *   last Sunday of March starts at 03:00 CEST); one lying wholly inside the gap has no working
 *   time that day.
 * - Fall back (ambiguous hour): a repeated wall time counts both times it occurs, so the repeated
 *   part of an interval is worked twice in real time (`sun 01:00 - 04:00` on the last Sunday of
 *   October is four real hours in Europe/Berlin), and an interval lying wholly inside the repeated
 *   hour (`sun 02:30 - 03:00`) yields two separate half-hours.
 *
 * Pure and deterministic: no clock is read; every instant is a parameter.
 */
import { WEEKDAYS, type MinuteInterval, type WorkingHours } from './types';
import { DAY_MS, MINUTE_MS, floorDiv, mod, offsetAt, offsetSegments } from './zone';

const WEEK_MS = 7 * DAY_MS;
/**
 * How far ahead `nextWorkingInstant` looks. A weekly pattern with any working time has some
 * within a week, unless DST gaps swallow it; eight weeks covers any realistic zone.
 */
const SEARCH_WEEKS = 8;
/** Window in which the interval containing an instant is followed to its end. */
const END_SEARCH_MS = 3 * DAY_MS;

/** A stretch of working time in UTC, tagged by the local day and interval it comes from. */
interface Piece {
  start: number;
  end: number;
  readonly day: number;
  readonly index: number;
}

function instant(at: Date, name: string): number {
  let ms = NaN;
  try {
    // Not `instanceof`: a Date from another realm (e.g. a Temporal workflow sandbox) counts too.
    ms = Date.prototype.getTime.call(at);
  } catch {
    // not a Date
  }
  if (Number.isNaN(ms)) throw new RangeError(`${name} must be a valid Date`);
  return ms;
}

function intervalsOn(hours: WorkingHours, localDay: number): readonly MinuteInterval[] {
  // Day 0 (1970-01-01) was a Thursday; WEEKDAYS is indexed 0 = Sunday.
  const weekday = WEEKDAYS[mod(localDay + 4, 7)];
  return weekday === undefined ? [] : (hours.days[weekday] ?? []);
}

function hasAnyWorkingTime(hours: WorkingHours): boolean {
  return WEEKDAYS.some((d) => (hours.days[d] ?? []).length > 0);
}

/**
 * Working time within `[from, to)` as UTC pieces in order. Pieces of one local interval that
 * abut (split only by a DST transition) are merged; pieces of different intervals are not, even
 * when they abut (e.g. `… - 24:00` followed by `00:00 - …` the next day).
 */
function workingPieces(hours: WorkingHours, from: number, to: number): Piece[] {
  const pieces: Piece[] = [];
  for (const seg of offsetSegments(hours.timezone, from, to)) {
    const localStart = seg.start + seg.offset;
    const localEnd = seg.end + seg.offset;
    for (let day = floorDiv(localStart, DAY_MS); day * DAY_MS < localEnd; day++) {
      intervalsOn(hours, day).forEach(([s, e], index) => {
        const start = Math.max(day * DAY_MS + s * MINUTE_MS - seg.offset, seg.start);
        const end = Math.min(day * DAY_MS + e * MINUTE_MS - seg.offset, seg.end);
        if (start < end) pieces.push({ start, end, day, index });
      });
    }
  }
  pieces.sort((a, b) => a.start - b.start);
  const merged: Piece[] = [];
  for (const piece of pieces) {
    const last = merged[merged.length - 1];
    if (
      last !== undefined &&
      last.end === piece.start &&
      last.day === piece.day &&
      last.index === piece.index
    ) {
      last.end = piece.end;
    } else {
      merged.push({ ...piece });
    }
  }
  return merged;
}

/** Whether `at` falls in working hours (interval starts are inside, ends are outside). */
export function isWithinWorkingHours(hours: WorkingHours, at: Date): boolean {
  const ms = instant(at, 'at');
  const local = ms + offsetAt(hours.timezone, ms);
  const day = floorDiv(local, DAY_MS);
  const sinceMidnight = local - day * DAY_MS;
  return intervalsOn(hours, day).some(
    ([s, e]) => sinceMidnight >= s * MINUTE_MS && sinceMidnight < e * MINUTE_MS,
  );
}

/**
 * The earliest working instant at or after `from`: an equal instant (a new Date) when `from` is
 * itself within working hours, otherwise the start of the next working interval. Null when the
 * definition has no working time at all (every day off), or when none occurs within eight weeks
 * (only possible if DST gaps swallow every interval).
 */
export function nextWorkingInstant(hours: WorkingHours, from: Date): Date | null {
  const start = instant(from, 'from');
  if (!hasAnyWorkingTime(hours)) return null;
  if (isWithinWorkingHours(hours, from)) return new Date(start);
  for (let week = 0; week < SEARCH_WEEKS; week++) {
    const first = workingPieces(hours, start + week * WEEK_MS, start + (week + 1) * WEEK_MS)[0];
    if (first !== undefined) return new Date(first.start);
  }
  return null;
}

/**
 * The end of the working interval containing `at` (the first instant after `at` that the
 * interval no longer covers), or null when `at` is not within working hours. This is the end of
 * the interval as written for that local day: when a day's interval ends at 24:00 and the next
 * day's starts at 00:00 the result is the midnight in between, although working time continues
 * there; call again at the returned instant to follow it.
 */
export function workingIntervalEnd(hours: WorkingHours, at: Date): Date | null {
  const ms = instant(at, 'at');
  if (!isWithinWorkingHours(hours, at)) return null;
  const piece = workingPieces(hours, ms, ms + END_SEARCH_MS)[0];
  return piece === undefined ? null : new Date(piece.end);
}
