import type { DatabasePool } from '../../db/pool';
import { ulid } from '../../db/ids';
import { recordScheduleFire, type ScheduleFireRow } from '../../db/runs/schedules';
import { wallTimeOf } from '../../services/runs/schedules/dst';

/** What recordScheduleFire did for one occurrence. */
export type ScheduleFireResult =
  | { outcome: 'recorded'; fire: ScheduleFireRow }
  | { outcome: 'already_recorded' }
  | { outcome: 'schedule_deleted' };

/** `runsQueue`: this deployment's runs queue, whose publisher delivers the notices written here. */
export function createScheduleActivities(deps: { pool: DatabasePool; runsQueue: string }) {
  return {
    /**
     * Records one occurrence's fire: its ledger row (`enqueued` with the subscriptions its
     * `schedule.fired` notice matches now, or `skipped_disabled`) and the notice, in one
     * statement keyed by (schedule_id, occurrence). Idempotent: a retry, a replayed or a
     * duplicated action finds the occurrence recorded and writes nothing; a deleted schedule
     * writes nothing. Keyed by the wall time too (the daylight-saving rule): the second instant
     * of a repeated wall time finds it recorded.
     */
    async recordScheduleFire(input: {
      scheduleId: string;
      tenantId: string;
      occurrence: string;
      cron?: string;
      timezone?: string;
    }): Promise<ScheduleFireResult> {
      const { cron, timezone, occurrence } = input;
      const wallTime = cron && timezone ? wallTimeOf(cron, timezone, Date.parse(occurrence)) : null;
      return recordScheduleFire(
        deps.pool,
        { scheduleId: input.scheduleId, occurrence, wallTime, taskQueue: deps.runsQueue },
        ulid(),
      );
    },
  };
}
export type ScheduleActivities = ReturnType<typeof createScheduleActivities>;
