import fs from 'node:fs/promises';
import type { DatabasePool } from '../../db/pool';
import type { Redis } from '../../db/redis';
import {
  LOG_STREAMS,
  RUNS_REDIS_PREFIX,
  logCacheKeys,
  logFilePath,
} from '../../services/runs/log-store';
import type { LogObjects } from '../../services/runs/log-objects';
import { logIndexPath } from '../../services/runs/log-file';
import { purgeContainerOutcomes } from '../../db/runs/container-outcomes';
import { purgeGoneDockerHosts } from '../../db/runs/docker-hosts';
import { deleteRuns, expiredRuns } from '../../db/runs/runs';

export function createRetentionActivities(deps: {
  pool: DatabasePool;
  redis: Redis;
  logDir: string;
  /** RUNS_LOG_S3_*: the run logs' object store; null: files in logDir. */
  logObjects: LogObjects | null;
}) {
  return {
    /**
     * One batch: deletes terminal runs whose finished_at is older than their tenant's
     * retention_days (events and samples go with them by cascade), their logs first (files or
     * objects) and cache; as many container outcomes kept past their day
     * (db/runs/container-outcomes.ts); and the rows of Docker hosts gone for a day
     * (db/runs/docker-hosts.ts). Idempotent: a batch that fails half-way leaves its rows, to be
     * taken again; a log already gone is no error.
     */
    async purgeExpiredRuns(input: { batchSize: number }): Promise<number> {
      await purgeContainerOutcomes(deps.pool, input.batchSize);
      await purgeGoneDockerHosts(deps.pool);
      const rows = await expiredRuns(deps.pool, input.batchSize);
      for (const row of rows) await deleteRunLogs(deps, row);
      if (rows.length > 0)
        await deleteRuns(
          deps.pool,
          rows.map((r) => r.track_id),
        );
      return rows.length;
    },
  };
}

async function deleteRunLogs(
  deps: { redis: Redis; logDir: string; logObjects: LogObjects | null },
  row: { track_id: string; tenant_id: string },
): Promise<void> {
  if (deps.logObjects)
    await deps.logObjects.deleteRun({ tenantId: row.tenant_id, trackId: row.track_id });
  else
    await Promise.all(
      LOG_STREAMS.flatMap((s) => {
        const file = logFilePath(deps.logDir, row.tenant_id, row.track_id, s);
        return [file, logIndexPath(file)].map((f) => fs.rm(f, { force: true }));
      }),
    );
  await deps.redis
    .del(...logCacheKeys(row.track_id).map((k) => RUNS_REDIS_PREFIX + k))
    .catch(() => 0);
}
export type RetentionActivities = ReturnType<typeof createRetentionActivities>;
