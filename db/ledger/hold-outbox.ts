import { z } from 'zod';
import { sql } from '../pool';
import type { Tx } from './context';
import { TRANSACTION_STATES } from './transactions';

/**
 * ledger.hold_outbox (migrations 0001, 0018): a posting that places a hold writes a row in its own
 * transaction (posting_write), with its process's task-queue prefix; the hold dispatcher
 * (services/ledger/holds.ts) claims the due rows of its own prefix and records the starts of
 * their workflows. Both statements run in the system context (withSystem).
 */

const dueHoldStart = z.object({
  transaction_id: z.string(),
  tenant_id: z.string(),
  /** ISO-8601 UTC. */
  expires_at: z.string(),
  /** The hold's transaction's state now: one settled before its start needs no workflow. */
  state: z.enum(TRANSACTION_STATES),
});
export type DueHoldStart = z.infer<typeof dueHoldStart>;

/**
 * Claims the due rows of `taskQueuePrefix` not yet dispatched (at most `limit`, none of `skip`,
 * none another process holds locked): each claim pushes the row's next attempt back, doubling
 * with its attempts up to `retryDelayMaxSeconds`.
 */
export async function claimDueHoldStarts(
  tx: Tx,
  w: { taskQueuePrefix: string; retryDelayMaxSeconds: number; limit: number; skip: string[] },
): Promise<DueHoldStart[]> {
  const rows = await tx.any(sql.type(dueHoldStart)`
    UPDATE ledger.hold_outbox o
    SET attempts = o.attempts + 1,
        next_attempt_at = now() + make_interval(secs => least(${w.retryDelayMaxSeconds}, power(2, o.attempts)))
    FROM ledger.transactions t
    WHERE t.transaction_id = o.transaction_id
      AND o.transaction_id IN (
        SELECT transaction_id FROM ledger.hold_outbox
        WHERE dispatched_at IS NULL AND next_attempt_at <= now()
          AND task_queue_prefix = ${w.taskQueuePrefix}
          AND NOT (transaction_id = ANY(${sql.array(w.skip, 'uuid')}))
        ORDER BY next_attempt_at LIMIT ${w.limit} FOR UPDATE SKIP LOCKED)
    RETURNING o.transaction_id, o.tenant_id, o.expires_at, t.state`);
  return [...rows];
}

/** These holds' workflows are started (a row already dispatched keeps its instant). */
export async function markHoldStartsDispatched(tx: Tx, transactionIds: string[]): Promise<void> {
  await tx.query(sql.unsafe`
    UPDATE ledger.hold_outbox SET dispatched_at = now()
    WHERE transaction_id = ANY(${sql.array(transactionIds, 'uuid')}) AND dispatched_at IS NULL`);
}
