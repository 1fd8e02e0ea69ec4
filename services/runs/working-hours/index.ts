/**
 * Working hours for the runs service (`working_hours_tjp` tenant quota): parses a TaskJuggler
 * `workinghours` definition and answers when runs may start. Pure and deterministic (no I/O,
 * no clock; zone names are judged by platform/time-zone.ts). See `parse.ts` for the accepted
 * syntax and `schedule.ts` for the time semantics (including daylight-saving transitions).
 */
export {
  DEFAULT_WORKING_DAYS,
  WEEKDAYS,
  WorkingHoursSyntaxError,
  type MinuteInterval,
  type Weekday,
  type WorkingHours,
} from './types';
export { WORKING_HOURS_MAX_BYTES, WORKING_HOURS_MAX_LINES, parseWorkingHours } from './parse';
export { isWithinWorkingHours, nextWorkingInstant, workingIntervalEnd } from './schedule';
