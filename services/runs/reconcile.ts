import { ScheduleAlreadyRunning, ScheduleOverlapPolicy } from '@temporalio/client';
import type { PlatformDeps } from '../../platform/deps';
import { taskQueues } from '../../contracts/shared/task-queues';
import { executionSearchAttributes } from '../../contracts/shared/search-attributes';
import { reconcileSummary } from '../../contracts/runs/summaries';
import { RECONCILE_EVERY, reconcileScheduleId } from '../../contracts/runs/reconcile';
import { PLATFORM_TENANT } from './self-checks';

/**
 * Makes sure the reconcile schedule exists (idempotent: an existing one is kept), beside the
 * retention purge and with its conventions. Best effort at start-up: the API serves even while
 * Temporal is still coming up. Overlap SKIP: a pass still running (a slow host) is not joined
 * by a second one; missed passes are not caught up (the next one does the same work).
 */
export async function ensureReconcileSchedule(
  deps: Pick<PlatformDeps, 'config' | 'temporal' | 'logger'>,
): Promise<void> {
  const prefix = deps.config.taskQueuePrefix;
  try {
    await deps.temporal.schedule.create({
      scheduleId: reconcileScheduleId(prefix),
      spec: { intervals: [{ every: RECONCILE_EVERY }] },
      action: {
        type: 'startWorkflow',
        workflowType: 'runsReconcileWorkflow',
        workflowId: `${prefix}runs-reconcile`,
        taskQueue: taskQueues(prefix).runs,
        args: [{}],
        typedSearchAttributes: executionSearchAttributes(PLATFORM_TENANT, 'runs'),
        ...reconcileSummary(),
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
      typedSearchAttributes: executionSearchAttributes(PLATFORM_TENANT, 'runs'),
    });
  } catch (error) {
    if (error instanceof ScheduleAlreadyRunning) return;
    deps.logger.warn(
      { err: (error as Error).message },
      'reconcile schedule not created; will retry at next start',
    );
  }
}
