import { condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { LedgerHoldActivities, SweepResult } from '../../activities/ledger/holds';
import { postgresProfile } from '../shared/activity-profiles';
import { holdSettledSignal, type HoldInput } from '../../contracts/ledger/hold';

export type HoldOutcome = 'settled' | 'expired' | 'already_final';

const db = proxyActivities<LedgerHoldActivities>(postgresProfile);

/**
 * Waits until the hold's expires_at, then expires it through an idempotent activity (a
 * conditional update of a pending transaction). Commit or void signal it to finish early.
 * Workflow time (Date.now) is deterministic; a timer firing a moment before the database's
 * clock agrees is retried by the activity's retry policy.
 */
export async function ledgerHoldWorkflow(input: HoldInput): Promise<HoldOutcome> {
  let settled = false;
  setHandler(holdSettledSignal, () => {
    settled = true;
  });
  const waitMs = Math.max(0, input.expiresAtMs - Date.now());
  if (await condition(() => settled, waitMs)) return 'settled';
  const state = await db.expireHold({
    tenantId: input.tenantId,
    transactionId: input.transactionId,
  });
  return state === 'expired' ? 'expired' : 'already_final';
}

/** Run by the schedule: expires every pending hold past its expires_at (a backstop for lost workflows). */
export async function ledgerHoldSweepWorkflow(): Promise<SweepResult> {
  return db.sweepExpiredHolds();
}
