import { z } from 'zod';
import { sql, type DatabasePool } from '../pool';

/** How long a container's outcome is kept after its removal (retries come within minutes). */
export const CONTAINER_OUTCOME_KEPT_HOURS = 24;

/**
 * A run container's outcome as the follow activity kept it (jsonb): what it answered before it
 * removed the container (activities/runs/run-docker.ts, whose ContainerOutcome it is).
 */
export const keptContainerOutcome = z.object({
  exitCode: z.number().nullable(),
  /** Docker's own error text when the container could not run (e.g. a bad command). */
  error: z.string().nullable(),
  stdoutBytes: z.number(),
  stderrBytes: z.number(),
  resultSummary: z.string(),
  stdoutFile: z.string(),
  stderrFile: z.string(),
  /** The follow activity removed the container (asked to with removeOnExit). */
  removed: z.boolean().optional(),
});
export type KeptContainerOutcome = z.infer<typeof keptContainerOutcome>;

const containerOutcomeRow = z.object({ outcome: keptContainerOutcome });

/** Keeps (or, on a retry that re-read the container, replaces) a run container's outcome. */
export async function keepContainerOutcome(
  db: Pick<DatabasePool, 'query'>,
  trackId: string,
  outcome: KeptContainerOutcome,
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO runs.container_outcomes (track_id, outcome) VALUES (${trackId}, ${sql.jsonb(outcome as never)})
    ON CONFLICT (track_id) DO UPDATE SET outcome = EXCLUDED.outcome, kept_at = now()`);
}

export async function findContainerOutcome(
  db: Pick<DatabasePool, 'maybeOneFirst'>,
  trackId: string,
): Promise<KeptContainerOutcome | null> {
  return db.maybeOneFirst(sql.type(containerOutcomeRow)`
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
