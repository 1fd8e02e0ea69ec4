import { z } from 'zod';
import { sql } from '../pool';
import type { Tx } from './context';

/**
 * ledger.unmetered_calls (migrations 0001, 0019): the calls served while the quota service did not
 * answer, replayed into it in batches (services/ledger/metering-replay.ts). System context.
 */

/** A call served unmetered, counted in `month` (YYYY-MM) of the tenant's. */
export async function recordUnmeteredCall(tx: Tx, tenantId: string, month: string): Promise<void> {
  await tx.query(
    sql.unsafe`INSERT INTO ledger.unmetered_calls (tenant_id, month) VALUES (${tenantId}, ${month})`,
  );
}

/** A batch of one root tenant's calls, marked with the idempotency key it is consumed under. */
export const replayBatch = z.object({
  replayKey: z.string(),
  tenantId: z.string(),
  /** The month the calls were served in (the quota service counts them in its month now). */
  month: z.string(),
  calls: z.number(),
});
export type ReplayBatch = z.infer<typeof replayBatch>;

/** A batch marked by a replay that did not finish, as it was marked. */
export async function findMarkedReplayBatch(tx: Tx): Promise<ReplayBatch | null> {
  return tx.maybeOne(sql.type(replayBatch)`
    SELECT replay_key AS "replayKey", tenant_id AS "tenantId", month, count(*)::int AS calls
    FROM ledger.unmetered_calls WHERE replay_key IS NOT NULL
    GROUP BY replay_key, tenant_id, month ORDER BY replay_key LIMIT 1`);
}

/** What markReplayBatch marked: no calls (and no tenant or month) when there were none to mark. */
const markedCalls = z.object({
  calls: z.number(),
  tenantId: z.string().nullable(),
  month: z.string().nullable(),
});

/**
 * The oldest unmarked calls of one root tenant and month (at most `limit`, none another process
 * holds locked), marked as one batch under `replayKey`; null when there were none.
 */
export async function markReplayBatch(
  tx: Tx,
  replayKey: string,
  limit: number,
): Promise<ReplayBatch | null> {
  const marked = await tx.one(sql.type(markedCalls)`
    WITH oldest AS (
      SELECT tenant_id, month FROM ledger.unmetered_calls WHERE replay_key IS NULL
      ORDER BY id LIMIT 1),
    batch AS (
      SELECT c.id FROM ledger.unmetered_calls c JOIN oldest USING (tenant_id, month)
      WHERE c.replay_key IS NULL ORDER BY c.id LIMIT ${limit}
      FOR UPDATE OF c SKIP LOCKED),
    marked AS (
      UPDATE ledger.unmetered_calls u SET replay_key = ${replayKey}
      FROM batch WHERE u.id = batch.id RETURNING u.tenant_id, u.month)
    SELECT count(*)::int AS calls, (array_agg(tenant_id))[1] AS "tenantId",
           (array_agg(month))[1] AS month
    FROM marked`);
  const { calls, tenantId, month } = marked;
  // A batch of one call or more has its tenant and month.
  return calls === 0 || tenantId === null || month === null
    ? null
    : { replayKey, calls, tenantId, month };
}

/** The batch's calls, once the quota service has taken them. */
export async function deleteReplayBatch(tx: Tx, replayKey: string): Promise<void> {
  await tx.query(sql.unsafe`DELETE FROM ledger.unmetered_calls WHERE replay_key = ${replayKey}`);
}
