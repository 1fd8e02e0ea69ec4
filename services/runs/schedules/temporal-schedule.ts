import type { ScheduleSpec } from '@temporalio/client';
import type { PlatformDeps } from '../../../platform/deps';
import { isTimeZone } from '../../../platform/time-zone';
import { runsError } from '../errors';
import { cronError } from './cron';
import { dstCalendars } from './dst';

/**
 * What schedules and template triggers share: a cron in an IANA zone, checked before Temporal
 * compiles it, made a Temporal Schedule spec with the daylight-saving rule, and read back.
 */

type Deps = Pick<PlatformDeps, 'temporal' | 'logger'>;

/** 422 invalid_cron (with why) or invalid_timezone, for the fields given. */
export function assertCronAndZone(body: { cron?: string; timezone?: string }): void {
  if (body.cron !== undefined) {
    const error = cronError(body.cron);
    if (error) throw runsError('invalid_cron', { message: `invalid_cron: ${error}` });
  }
  if (body.timezone !== undefined && !isTimeZone(body.timezone))
    throw runsError('invalid_timezone');
}

/** The cron in its zone, with the calendar entries of the daylight-saving rule (dst.ts). */
export const cronSpecOf = (cron: string, timezone: string): ScheduleSpec => ({
  cronExpressions: [cron],
  calendars: dstCalendars(cron, timezone, Date.now()),
  timezone,
});

/** A Temporal failure as 503 schedule_unavailable (the caller's transaction rolls back). */
export function scheduleUnavailable(deps: Deps, error: unknown, temporalId: string): Error {
  deps.logger.warn({ err: (error as Error).message, temporalId }, 'temporal schedule call failed');
  return runsError('schedule_unavailable');
}

/** The Temporal Schedule's next action time; null when Temporal does not answer. */
export async function nextActionTime(deps: Deps, temporalId: string): Promise<string | null> {
  try {
    const description = await deps.temporal.schedule.getHandle(temporalId).describe();
    return description.info.nextActionTimes[0]?.toISOString() ?? null;
  } catch (error) {
    deps.logger.debug({ err: (error as Error).message, temporalId }, 'schedule not described');
    return null;
  }
}
