/**
 * What the runs API, the reconcile activities and the reconcile workflow share
 * (workflows/runs/reconcile.ts): its schedule and the reasons it fails a run with. Pure, so the
 * sandboxed bundle, the activities and the API all import it.
 */

/** The operator-visible schedule that runs the reconciler (id carries the task-queue prefix). */
export const reconcileScheduleId = (taskQueuePrefix: string): string =>
  `schedule/${taskQueuePrefix}runs-reconcile`;
/** A stuck run holds a tenant's slot; a few minutes is the longest we let that last. */
export const RECONCILE_EVERY = '2 minutes';

/**
 * Why the reconciler failed a run (the run's `reason`): the state of its workflow execution
 * `run/<track_id>` as Temporal describes it.
 */
export const RECONCILE_REASONS = {
  TERMINATED: 'workflow_terminated',
  FAILED: 'workflow_failed',
  TIMED_OUT: 'workflow_timed_out',
  CANCELLED: 'workflow_cancelled',
  COMPLETED: 'workflow_completed',
  MISSING: 'workflow_missing',
} as const;
export type ReconcileReason = (typeof RECONCILE_REASONS)[keyof typeof RECONCILE_REASONS];
