import { MONTHS, type CalendarSpec } from '@temporalio/client';
import { IANAZone } from 'luxon';
import { cronMatcher, type WallMinute } from './cron';

/**
 * Our daylight-saving rule for a cron in an IANA zone (services/runs/README.md, "Daylight saving"),
 * on top of Temporal's scheduler, which matches the cron against the zone's wall clock:
 *
 * - a wall time the clocks skip (spring forward) fires once, moved forward by the gap (02:30 in
 *   New York's missing hour fires at 03:30 EDT), as RFC 5545 reads a nonexistent local time; if
 *   that instant is itself an occurrence, it is that one. Temporal alone does not fire it:
 *   dstCalendars adds the moved wall times (unambiguous) to the Temporal Schedule;
 * - a wall time the clocks repeat (fall back) fires once: the fire ledger is keyed by the wall
 *   time too (wallTimeOf), so where Temporal fires both instants the second records nothing.
 */

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** Longer than any zone's gap: an instant this far after a spring-forward is past its moved times. */
const MOVED_LOOKBEHIND_MS = 3 * 3_600_000;
/** How far ahead the adjustments reach from the schedule's creation or last change. */
export const DST_HORIZON_YEARS = 10;

/** A change of a zone's UTC offset: the first instant of the new offset (offsets in minutes). */
export interface ZoneTransition {
  at: number;
  before: number;
  after: number;
}

/** The zone's offset changes in [fromMs, untilMs), to the minute. */
export function zoneTransitions(zone: string, fromMs: number, untilMs: number): ZoneTransition[] {
  const z = IANAZone.create(zone);
  const transitions: ZoneTransition[] = [];
  let t = Math.floor(fromMs / MINUTE_MS) * MINUTE_MS;
  for (let offset = z.offset(t); t < untilMs; t += DAY_MS) {
    const next = z.offset(t + DAY_MS);
    if (next === offset) continue;
    let [lo, hi] = [t, t + DAY_MS]; // offset(lo) is the old one, offset(hi) the new one
    while (hi - lo > MINUTE_MS) {
      const mid = lo + Math.floor((hi - lo) / MINUTE_MS / 2) * MINUTE_MS;
      if (z.offset(mid) === offset) lo = mid;
      else hi = mid;
    }
    transitions.push({ at: hi, before: offset, after: next });
    offset = next;
  }
  return transitions;
}

/** A wall clock reading held as milliseconds (a UTC Date shows the wall fields). */
function wallMinute(wallMs: number): WallMinute {
  const d = new Date(wallMs);
  return {
    minute: d.getUTCMinutes(),
    hour: d.getUTCHours(),
    day: d.getUTCDate(),
    month: d.getUTCMonth() + 1,
    weekday: d.getUTCDay(),
  };
}

/** The instants (as wall readings after the gap) a spring-forward transition moves the cron to. */
function movedWallTimes(matches: (wall: WallMinute) => boolean, t: ZoneTransition): number[] {
  const gap = (t.after - t.before) * MINUTE_MS;
  // The skipped wall times start at the old offset's reading of the transition instant.
  const first = t.at + t.before * MINUTE_MS;
  const moved: number[] = [];
  for (let wall = first; wall < first + gap; wall += MINUTE_MS)
    // A moved wall time the cron matches itself is already that occurrence.
    if (matches(wallMinute(wall)) && !matches(wallMinute(wall + gap))) moved.push(wall + gap);
  return moved;
}

/**
 * The calendar entries that make Temporal fire the moved wall times, for the zone's spring-forward
 * transitions in [fromMs, fromMs + DST_HORIZON_YEARS): one entry per day and wall hour.
 */
export function dstCalendars(cron: string, zone: string, fromMs: number): CalendarSpec[] {
  const matches = cronMatcher(cron);
  const untilMs = fromMs + DST_HORIZON_YEARS * 365.25 * DAY_MS;
  const byHour = new Map<string, CalendarSpec & { minute: number[] }>();
  for (const t of zoneTransitions(zone, fromMs, untilMs)) {
    if (t.after <= t.before) continue;
    for (const wall of movedWallTimes(matches, t)) {
      const d = new Date(wall);
      const key = d.toISOString().slice(0, 13);
      const entry = byHour.get(key) ?? {
        year: d.getUTCFullYear(),
        month: MONTHS[d.getUTCMonth()]!,
        dayOfMonth: d.getUTCDate(),
        hour: d.getUTCHours(),
        minute: [],
        comment: `daylight saving ${key.slice(0, 10)}: skipped wall times, moved forward`,
      };
      entry.minute.push(d.getUTCMinutes());
      byHour.set(key, entry);
    }
  }
  return [...byHour.values()];
}

/**
 * The wall time (local, `YYYY-MM-DDTHH:MM:SS`) an instant fires for: its reading in the zone, or,
 * for an instant a skipped wall time was moved to, the skipped wall time. Two instants of one
 * repeated wall time read the same.
 */
export function wallTimeOf(cron: string, zone: string, ms: number): string {
  const z = IANAZone.create(zone);
  const offset = z.offset(ms);
  const wall = ms + offset * MINUTE_MS;
  const gap = (offset - z.offset(ms - MOVED_LOOKBEHIND_MS)) * MINUTE_MS;
  const matches = cronMatcher(cron);
  const moved =
    gap > 0 &&
    z.offset(ms - gap) !== offset && // within `gap` of the transition
    wall % MINUTE_MS === 0 &&
    !matches(wallMinute(wall)) &&
    matches(wallMinute(wall - gap));
  return new Date(moved ? wall - gap : wall).toISOString().slice(0, 19);
}
