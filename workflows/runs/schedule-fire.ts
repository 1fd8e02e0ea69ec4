import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { ScheduleActivities, ScheduleFireResult } from '../../activities/runs/schedules';
import { localPostgresProfile } from '../shared/activity-profiles';
import type { ScheduleFireWorkflowInput } from '../../contracts/runs/schedule-fire';

/** Set by Temporal on every execution a schedule starts: the occurrence it stands for. */
export const TEMPORAL_SCHEDULED_START_TIME = defineSearchAttributeKey(
  'TemporalScheduledStartTime',
  SearchAttributeType.DATETIME,
);

const db = proxyLocalActivities<ScheduleActivities>(localPostgresProfile);

/**
 * The occurrence an execution a Temporal Schedule started stands for: its
 * TemporalScheduledStartTime (an execution started by hand, without it, its own start time).
 */
export function scheduledOccurrence(): string {
  const info = workflowInfo();
  const scheduled = info.typedSearchAttributes.get(TEMPORAL_SCHEDULED_START_TIME);
  return (scheduled ?? info.runStartTime).toISOString();
}

/**
 * One fire of a schedule, started by its Temporal Schedule (a due occurrence, a catch-up after
 * downtime within the catch-up window, or an operator's backfill or trigger); recordScheduleFire writes its ledger row and
 * `schedule.fired` notice once per occurrence, so a duplicated action records nothing twice, nor a
 * repeated wall time's second instant (the daylight-saving rule).
 */
export async function scheduleFireWorkflow(
  input: ScheduleFireWorkflowInput,
): Promise<ScheduleFireResult> {
  return db.recordScheduleFire({ ...input, occurrence: scheduledOccurrence() });
}
