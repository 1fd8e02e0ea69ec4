import { defineSignal } from '@temporalio/workflow';

/**
 * What the ledger API and the hold workflows share (workflows/ledger/hold.ts): ids, input and
 * the settle signal. Pure (defineSignal only names the signal), so the sandboxed bundle and the
 * API both import it.
 */

/** `ledger-hold/<transaction_id>`: an operator with a transaction id finds its hold in one search. */
export const holdWorkflowId = (transactionId: string): string => `ledger-hold/${transactionId}`;
/** `schedule/<prefix>ledger-hold-sweep`; the prefix is empty outside tests. */
export const holdSweepScheduleId = (taskQueuePrefix: string): string =>
  `schedule/${taskQueuePrefix}ledger-hold-sweep`;

/** Sent by commit and void: the hold is final, stop waiting. */
export const holdSettledSignal = defineSignal<[{ state: string }]>('holdSettled');

export interface HoldInput {
  tenantId: string;
  transactionId: string;
  /** The hold's expires_at as epoch milliseconds. */
  expiresAtMs: number;
}
