import { z } from 'zod';
import { selectOneRow, sql, type DatabasePool } from '../pool';
import { ACTIVE_STATES, RUN_STATES } from '../../contracts/runs/run';

export const activeRunRow = z.object({
  track_id: z.string(),
  tenant_id: z.string(),
  state: z.enum(RUN_STATES),
  worker_id: z.string().nullable(),
  workflow_task_queue: z.string().nullable(),
  metered: z.boolean(),
  started_at: z.string().nullable(),
  /** Seconds since the row last changed (the database's clock). */
  idle_seconds: z.number(),
  /** The concurrency cap of the run's key's tier (null: none), for waking waiting runs. */
  tier_concurrent_runs: z.number().nullable(),
});
export type ActiveRunRow = z.infer<typeof activeRunRow>;

/**
 * One page of active runs whose workflow start is confirmed (workflow_input cleared), in
 * track_id order after `afterTrackId`. Rows still carrying their workflow input belong to the
 * start sweeper (services/runs/workflow-starter.ts), which starts or confirms them; the reconciler
 * never judges them, so it never races a start. Served by the partial index runs_active_track.
 */
export async function activeRunsPage(
  pool: DatabasePool,
  page: { afterTrackId: string; limit: number; tenantId: string | null },
): Promise<readonly ActiveRunRow[]> {
  const conditions = [
    sql.fragment`r.state = ANY(${sql.array([...ACTIVE_STATES], 'text')})`,
    sql.fragment`r.workflow_input IS NULL`,
    sql.fragment`r.track_id > ${page.afterTrackId}`,
  ];
  if (page.tenantId !== null) conditions.push(sql.fragment`r.tenant_id = ${page.tenantId}`);
  return pool.any(sql.type(activeRunRow)`
    SELECT r.track_id, r.tenant_id, r.state, r.worker_id, r.workflow_task_queue, r.metered,
           r.started_at,
           EXTRACT(EPOCH FROM (clock_timestamp() - r.updated_at))::float8 AS idle_seconds,
           t.concurrent_runs AS tier_concurrent_runs
    FROM runs.runs r
    LEFT JOIN runs.api_keys k ON k.key_id = r.key_id
    LEFT JOIN runs.tiers t ON t.tier = k.tier
    WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY r.track_id LIMIT ${page.limit}`);
}

/** Whether the event id is stored (a retried repair whose transition already committed). */
export async function eventStored(pool: DatabasePool, eventId: string): Promise<boolean> {
  return (
    (await pool.maybeOne(
      sql.type(selectOneRow)`SELECT 1 FROM runs.run_events WHERE event_id = ${eventId}`,
    )) !== null
  );
}

const trackIdRow = z.object({ track_id: z.string() });

/** Which of these runs are active (not ended, and still stored). */
export async function activeTrackIds(pool: DatabasePool, trackIds: string[]): Promise<Set<string>> {
  const rows = await pool.anyFirst(sql.type(trackIdRow)`
    SELECT track_id FROM runs.runs
    WHERE track_id = ANY(${sql.array(trackIds, 'text')})
      AND state = ANY(${sql.array([...ACTIVE_STATES], 'text')})`);
  return new Set(rows);
}
