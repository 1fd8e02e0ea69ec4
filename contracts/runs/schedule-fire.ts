/**
 * What the runs API and the schedule fire workflow share (workflows/runs/schedule-fire.ts): ids,
 * type and input. Pure, so the sandboxed bundle and the API both import it.
 */

/** One Temporal Schedule per schedule: `schedule/<schedule_id>`. */
export const scheduleTemporalId = (scheduleId: string): string => `schedule/${scheduleId}`;
/**
 * The workflow id a schedule's action is given; Temporal appends the occurrence to it, so one
 * fire is `schedule-fire/<schedule_id>-<occurrence, RFC 3339 UTC>`.
 */
export const scheduleFireWorkflowIdBase = (scheduleId: string): string =>
  `schedule-fire/${scheduleId}`;
export const SCHEDULE_FIRE_WORKFLOW_TYPE = 'scheduleFireWorkflow';

export interface ScheduleFireWorkflowInput {
  scheduleId: string;
  tenantId: string;
  /** The schedule's cron and zone when the action was set (absent from fires before the DST rule). */
  cron?: string;
  timezone?: string;
}
