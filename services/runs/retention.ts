import { ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { PlatformDeps } from '../../platform/deps';
import { taskQueues } from '../../contracts/shared/task-queues';
import { executionSearchAttributes } from '../../contracts/shared/search-attributes';
import { retentionSummary } from '../../contracts/runs/summaries';
import { RETENTION_PURGE_EVERY, retentionScheduleId } from '../../contracts/runs/retention';
import { PLATFORM_TENANT } from './self-checks';

/**
 * Makes sure the retention purge schedule exists (idempotent: an existing one is kept).
 * Best effort at start-up: the API serves even while Temporal is still coming up.
 */
export async function ensureRetentionSchedule(deps: PlatformDeps): Promise<void> {
  const prefix = deps.config.taskQueuePrefix;
  try {
    await deps.temporal.schedule.create({
      scheduleId: retentionScheduleId(prefix),
      spec: { intervals: [{ every: RETENTION_PURGE_EVERY }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'runsRetentionPurgeWorkflow',
        workflowId: `${prefix}runs-retention-purge`,
        taskQueue: taskQueues(prefix).runs,
        args: [],
        typedSearchAttributes: executionSearchAttributes(PLATFORM_TENANT, 'runs'),
        ...retentionSummary(),
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' },
      typedSearchAttributes: executionSearchAttributes(PLATFORM_TENANT, 'runs'),
    });
  } catch (error) {
    if (error instanceof ScheduleAlreadyRunning) return;
    deps.logger.warn(
      { err: (error as Error).message },
      'retention schedule not created; will retry at next start',
    );
  }
}
