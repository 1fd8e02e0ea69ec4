import { ApplicationFailure, log } from '@temporalio/activity';
import type { DatabasePool } from '../../db/pool';
import { readDueHolds, type DueHold } from '../../db/ledger/transactions';
import { withSystem } from '../../db/ledger/context';
import { settlePendingTransaction } from '../../services/ledger/transactions';
import { LEDGER_ERRORS } from '../../services/ledger/errors';
import { callService } from '../shared/domain-failures';

/** Due holds read per query of a sweep, oldest first. */
export const SWEEP_BATCH_MAX = 500;
/**
 * A sweep starts no new batch after this long (well inside postgresProfile's 10 s timeout); the
 * schedule's next run takes the rest. About 1,500 holds at 4 ms each.
 */
export const SWEEP_BUDGET_MS = 6_000;

export interface SweepResult {
  expired: number;
  /** Holds whose expiry failed; they stay due and the next run tries them again. */
  failed: number;
  /** The budget ran out with holds still due. */
  more: boolean;
}

/**
 * Expires due holds batch after batch, oldest first, until none is left or the budget is spent,
 * so a backlog of other tenants' holds does not make a due hold wait for the next run. A hold
 * whose expiry fails is logged and passed over (the keyset cursor moves past it), so it cannot
 * hold up the ones behind it; only a batch in which every hold fails fails the sweep, since that
 * is the database or the service, not a hold, and Temporal retries the activity.
 */
export async function sweepInBatches(deps: {
  readDue(after: DueHold | null, limit: number): Promise<readonly DueHold[]>;
  expire(hold: DueHold): Promise<string>;
  batchMax: number;
  budgetMs: number;
  now?: () => number;
  onFailure?: (hold: DueHold, error: unknown) => void;
}): Promise<SweepResult> {
  const now = deps.now ?? Date.now;
  const started = now();
  const result: SweepResult = { expired: 0, failed: 0, more: false };
  let after: DueHold | null = null;
  for (;;) {
    const due = await deps.readDue(after, deps.batchMax);
    let lastError: unknown;
    let batchFailed = 0;
    for (const hold of due) {
      try {
        if ((await deps.expire(hold)) === 'expired') result.expired++;
      } catch (error) {
        batchFailed++;
        lastError = error;
        deps.onFailure?.(hold, error);
      }
    }
    if (due.length > 0 && batchFailed === due.length) throw lastError;
    result.failed += batchFailed;
    if (due.length < deps.batchMax) return result;
    after = due[due.length - 1]!;
    if (now() - started >= deps.budgetMs) return { ...result, more: true };
  }
}

export function createLedgerHoldActivities(deps: { pool: DatabasePool }) {
  /**
   * Idempotent: a hold already final is left as it is and its state returned. A hold the
   * database's clock does not yet see as due is retried; the ledger's final refusals
   * (TRANSACTION_NOT_FOUND, ...) end the activity as non-retryable failures of that type.
   */
  async function expireHold(input: { tenantId: string; transactionId: string }): Promise<string> {
    const outcome = await callService(LEDGER_ERRORS, () =>
      settlePendingTransaction(deps.pool, input.tenantId, input.transactionId, 'expire'),
    );
    switch (outcome.kind) {
      case 'settled':
        return outcome.settled.state;
      case 'already_final':
        return outcome.state;
      case 'not_due':
        throw ApplicationFailure.retryable('hold not due yet by the database clock', 'HoldNotDue');
    }
  }

  return {
    expireHold,
    async sweepExpiredHolds(): Promise<SweepResult> {
      return sweepInBatches({
        readDue: (after, limit) =>
          callService(LEDGER_ERRORS, () =>
            withSystem(deps.pool, (tx) => readDueHolds(tx, after, limit)),
          ),
        expire: (hold) =>
          expireHold({ tenantId: hold.tenant_id, transactionId: hold.transaction_id }),
        batchMax: SWEEP_BATCH_MAX,
        budgetMs: SWEEP_BUDGET_MS,
        onFailure: (hold, error) => {
          log.warn('hold not expired by the sweep; the next run tries it again', {
            tenantId: hold.tenant_id,
            transactionId: hold.transaction_id,
            error: (error as Error).message,
          });
        },
      });
    },
  };
}
export type LedgerHoldActivities = ReturnType<typeof createLedgerHoldActivities>;
