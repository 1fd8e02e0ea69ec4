import { ApplicationFailure } from '@temporalio/activity';
import { sql, type DatabasePool } from '../../db/pool';
import { withSystem } from '../../db/ledger/context';
import { settleTransaction } from '../../api/ledger/transactions';
import { isAppError } from '../../api/platform/errors';

/** Holds expired per sweep run, oldest first; the next run takes the rest. */
export const SWEEP_BATCH_MAX = 500;

export function createLedgerHoldActivities(deps: { pool: DatabasePool }) {
  /** Idempotent: a hold already final is left as it is and its state returned. */
  async function expireHold(input: { tenantId: string; transactionId: string }): Promise<string> {
    try {
      return (await settleTransaction(deps.pool, input.tenantId, input.transactionId, 'expire'))
        .state;
    } catch (error) {
      if (isAppError(error) && error.code === 'INVALID_TRANSACTION_STATE') {
        const state = (error.details as { state?: string } | undefined)?.state ?? 'unknown';
        if (state === 'pending')
          throw ApplicationFailure.retryable(
            'hold not due yet by the database clock',
            'HoldNotDue',
          );
        return state;
      }
      if (isAppError(error) && error.code === 'TRANSACTION_NOT_FOUND') {
        throw ApplicationFailure.nonRetryable(
          `transaction ${input.transactionId} not found`,
          'NotFound',
        );
      }
      throw error;
    }
  }

  return {
    expireHold,
    async sweepExpiredHolds(): Promise<{ expired: number }> {
      const due = (await withSystem(deps.pool, (tx) =>
        tx.any(sql.unsafe`
          SELECT transaction_id, tenant_id FROM ledger.transactions
          WHERE state = 'pending' AND expires_at <= now()
          ORDER BY expires_at LIMIT ${SWEEP_BATCH_MAX}`),
      )) as { transaction_id: string; tenant_id: string }[];
      let expired = 0;
      for (const hold of due) {
        if (
          (await expireHold({ tenantId: hold.tenant_id, transactionId: hold.transaction_id })) ===
          'expired'
        )
          expired++;
      }
      return { expired };
    },
  };
}
export type LedgerHoldActivities = ReturnType<typeof createLedgerHoldActivities>;
