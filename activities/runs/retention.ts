import fs from 'node:fs/promises';
import type { DatabasePool } from '../../db/pool';
import { sql } from '../../db/pool';
import type { Redis } from '../../db/redis';
import { RUNS_REDIS_PREFIX, logCacheKeys, logFilePath } from '../../api/runs/log-store';
import { purgeContainerOutcomes } from '../../db/runs/container-outcomes';
import { purgeGoneDockerHosts } from '../../db/runs/docker-hosts';

export function createRetentionActivities(deps: {
  pool: DatabasePool;
  redis: Redis;
  logDir: string;
}) {
  return {
    /**
     * One batch: deletes terminal runs whose finished_at is older than their tenant's
     * retention_days (events and samples go with them by cascade), then their log files and
     * cache; as many container outcomes kept past their day (db/runs/container-outcomes.ts); and
     * the rows of Docker hosts gone for a day (db/runs/docker-hosts.ts).
     * Idempotent: a retried batch finds fewer rows, and file removal tolerates absence.
     */
    async purgeExpiredRuns(input: { batchSize: number }): Promise<number> {
      await purgeContainerOutcomes(deps.pool, input.batchSize);
      await purgeGoneDockerHosts(deps.pool);
      const rows = (await deps.pool.any(sql.unsafe`
        DELETE FROM runs.runs r USING runs.tenant_quotas q
        WHERE r.track_id IN (
          SELECT r2.track_id FROM runs.runs r2 JOIN runs.tenant_quotas q2 ON q2.tenant_id = r2.tenant_id
          WHERE r2.finished_at IS NOT NULL
            AND r2.finished_at < now() - make_interval(days => q2.retention_days)
          ORDER BY r2.finished_at LIMIT ${input.batchSize})
          AND q.tenant_id = r.tenant_id
        RETURNING r.track_id, r.tenant_id`)) as unknown as {
        track_id: string;
        tenant_id: string;
      }[];
      for (const row of rows) {
        await Promise.all(
          (['stdout', 'stderr', 'both'] as const).map((s) =>
            fs.rm(logFilePath(deps.logDir, row.tenant_id, row.track_id, s), { force: true }),
          ),
        );
        await deps.redis
          .del(...logCacheKeys(row.track_id).map((k) => RUNS_REDIS_PREFIX + k))
          .catch(() => 0);
      }
      return rows.length;
    },
  };
}
export type RetentionActivities = ReturnType<typeof createRetentionActivities>;
