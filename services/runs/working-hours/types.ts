/**
 * Parsed form of a tenant's working-hours definition (`working_hours_tjp`).
 *
 * Plain JSON data (no classes, no Dates, no `undefined`): it survives `JSON.stringify` /
 * `JSON.parse` unchanged, so it can be stored or passed through Temporal payloads.
 */

/** Weekday keys, indexed like TaskJuggler (0 = Sunday … 6 = Saturday). */
export const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** `[start, end)` in minutes after local midnight; `0 <= start < end <= 1440` (1440 = 24:00). */
export type MinuteInterval = readonly [start: number, end: number];

export interface WorkingHours {
  /** Format version of this object. */
  readonly version: 1;
  /** IANA time zone the intervals are read in, as written (default and any UTC alias: `UTC`). */
  readonly timezone: string;
  /**
   * Working intervals per weekday in local wall-clock time: sorted, non-overlapping and
   * non-adjacent (adjacent intervals are merged when parsing). An empty list is a day off.
   */
  readonly days: Readonly<Record<Weekday, readonly MinuteInterval[]>>;
  /** The `shift <id> "<name>" { … }` block the lines came from, if any (informational). */
  readonly shift: { readonly id: string | null; readonly name: string | null } | null;
}

/**
 * TaskJuggler's built-in working hours: mon–fri 9:00–12:00 and 13:00–18:00, weekends off.
 * `workinghours` lines modify this default; days no line names keep it.
 */
export const DEFAULT_WORKING_DAYS: Readonly<Record<Weekday, readonly MinuteInterval[]>> = {
  sun: [],
  mon: [
    [540, 720],
    [780, 1080],
  ],
  tue: [
    [540, 720],
    [780, 1080],
  ],
  wed: [
    [540, 720],
    [780, 1080],
  ],
  thu: [
    [540, 720],
    [780, 1080],
  ],
  fri: [
    [540, 720],
    [780, 1080],
  ],
  sat: [],
};

/** Invalid definition. `line` (and `column` when known) are 1-based; the message names both. */
export class WorkingHoursSyntaxError extends Error {
  readonly line: number;
  readonly column?: number;

  constructor(problem: string, line: number, column?: number) {
    super(
      column === undefined
        ? `line ${line}: ${problem}`
        : `line ${line}, column ${column}: ${problem}`,
    );
    this.name = 'WorkingHoursSyntaxError';
    this.line = line;
    if (column !== undefined) this.column = column;
  }
}
