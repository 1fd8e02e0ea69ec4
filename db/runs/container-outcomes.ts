import { sql, type DatabasePool } from '../pool';

/** How long a container's outcome is kept after its removal (retries come within minutes). */
export const CONTAINER_OUTCOME_KEPT_HOURS = 24;

/** Keeps (or, on a retry that re-read the container, replaces) a run container's outcome. */
export async function keepContainerOutcome(
  db: Pick<DatabasePool, 'query'>,
  trackId: string,
  outcome: unknown,
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO runs.container_outcomes (track_id, outcome) VALUES (${trackId}, ${sql.jsonb(outcome as never)})
    ON CONFLICT (track_id) DO UPDATE SET outcome = EXCLUDED.outcome, kept_at = now()`);
}

export async function findContainerOutcome(
  db: Pick<DatabasePool, 'maybeOneFirst'>,
  trackId: string,
): Promise<unknown> {
  return db.maybeOneFirst(sql.unsafe`
    SELECT outcome FROM runs.container_outcomes WHERE track_id = ${trackId}`);
}

/** Deletes up to `limit` outcomes kept longer than CONTAINER_OUTCOME_KEPT_HOURS. */
export async function purgeContainerOutcomes(
  db: Pick<DatabasePool, 'query'>,
  limit: number,
): Promise<number> {
  const result = await db.query(sql.unsafe`
    DELETE FROM runs.container_outcomes WHERE track_id IN (
      SELECT track_id FROM runs.container_outcomes
      WHERE kept_at < now() - make_interval(hours => ${CONTAINER_OUTCOME_KEPT_HOURS})
      ORDER BY kept_at LIMIT ${limit})`);
  return result.rowCount;
}
