/**
 * What the runs API and the retention purge workflow share (workflows/runs/retention.ts): its
 * schedule. Pure, so the sandboxed bundle and the API both import it.
 */

/** The operator-visible schedule that runs the purge (id carries the task-queue prefix). */
export const retentionScheduleId = (taskQueuePrefix: string): string =>
  `schedule/${taskQueuePrefix}runs-retention-purge`;
export const RETENTION_PURGE_EVERY = '1 hour';
