import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { ScheduleActivities, ScheduleFireResult } from '../../activities/runs/schedules';
import { localPostgresProfile } from '../platform/activity-profiles';

/** One Temporal Schedule per schedule: `schedule/<schedule_id>`. */
export const scheduleTemporalId = (scheduleId: string): string => `schedule/${scheduleId}`;
/**
 * The workflow id a schedule's action is given; Temporal appends the occurrence to it, so one
 * fire is `schedule-fire/<schedule_id>-<occurrence, RFC 3339 UTC>`.
 */
export const scheduleFireWorkflowIdBase = (scheduleId: string): string =>
  `schedule-fire/${scheduleId}`;
export const SCHEDULE_FIRE_WORKFLOW_TYPE = 'scheduleFireWorkflow';

/** Set by Temporal on every execution a schedule starts: the occurrence it stands for. */
export const TEMPORAL_SCHEDULED_START_TIME = defineSearchAttributeKey(
  'TemporalScheduledStartTime',
  SearchAttributeType.DATETIME,
);

export interface ScheduleFireWorkflowInput {
  scheduleId: string;
  tenantId: string;
}

const db = proxyLocalActivities<ScheduleActivities>(localPostgresProfile);

/**
 * One fire of a schedule, started by its Temporal Schedule (a due occurrence, a catch-up after
 * downtime within the catch-up window, or an operator's backfill or trigger). The occurrence is
 * the scheduler's TemporalScheduledStartTime search attribute (an execution started by hand,
 * without it, stands for its own start time); recordScheduleFire writes its ledger row and
 * `schedule.fired` notice once per occurrence, so a duplicated action records nothing twice.
 */
export async function scheduleFireWorkflow(
  input: ScheduleFireWorkflowInput,
): Promise<ScheduleFireResult> {
  const info = workflowInfo();
  const scheduled = info.typedSearchAttributes.get(TEMPORAL_SCHEDULED_START_TIME);
  const occurrence = (scheduled ?? info.runStartTime).toISOString();
  return db.recordScheduleFire({ ...input, occurrence });
}
