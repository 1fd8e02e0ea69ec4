import { proxyActivities } from '@temporalio/workflow';
import type { RetentionActivities } from '../../activities/runs/retention';
import { postgresProfile } from '../shared/activity-profiles';

/** Runs deleted per activity call; the workflow loops until a batch comes back short. */
export const RETENTION_BATCH_SIZE = 500;
/** Batches per execution, so one purge never grows an unbounded history. */
export const RETENTION_BATCHES_MAX = 200;

const db = proxyActivities<RetentionActivities>({
  ...postgresProfile,
  startToCloseTimeout: '2 minutes',
});

/**
 * Deletes terminal runs older than their tenant's retention_days (finished_at), with their
 * events, samples and log files, in batches. Started by the schedule
 * `schedule/runs-retention-purge`; operators see each execution in the Web UI.
 */
export async function runsRetentionPurgeWorkflow(): Promise<{ deleted: number }> {
  let deleted = 0;
  for (let batch = 0; batch < RETENTION_BATCHES_MAX; batch++) {
    const purged = await db.purgeExpiredRuns({ batchSize: RETENTION_BATCH_SIZE });
    deleted += purged;
    if (purged < RETENTION_BATCH_SIZE) break;
  }
  return { deleted };
}
