import type { Side } from '../../db/ledger/accounts';

/**
 * Balance arithmetic (no I/O) for reads and settlement. The posting rules themselves (1–4) run
 * in the database, in ledger.post_transaction (migration 0004), under the accounts' row locks.
 */

export interface Leg {
  accountId: string;
  assetTypeId: string;
  direction: Side;
  amountMinor: bigint;
}

export interface Counters {
  postedDebits: bigint;
  postedCredits: bigint;
  pendingDebits: bigint;
  pendingCredits: bigint;
}

const ZERO_COUNTERS: Counters = {
  postedDebits: 0n,
  postedCredits: 0n,
  pendingDebits: 0n,
  pendingCredits: 0n,
};

/** Posted balance on the normal side (what the account "has"). */
export function postedBalance(side: Side, c: Counters): bigint {
  return side === 'debit' ? c.postedDebits - c.postedCredits : c.postedCredits - c.postedDebits;
}

/** Available = posted less what is held on the contra side; incoming pending funds do not count (rule 3). */
export function availableBalance(side: Side, c: Counters): bigint {
  return side === 'debit'
    ? c.postedDebits - c.postedCredits - c.pendingCredits
    : c.postedCredits - c.postedDebits - c.pendingDebits;
}

/** The counter movement of one transaction on each account it touches. */
export function deltasOf(legs: Leg[], pending: boolean): Map<string, Counters> {
  const deltas = new Map<string, Counters>();
  for (const leg of legs) {
    const d = deltas.get(leg.accountId) ?? { ...ZERO_COUNTERS };
    if (pending) {
      if (leg.direction === 'debit') d.pendingDebits += leg.amountMinor;
      else d.pendingCredits += leg.amountMinor;
    } else if (leg.direction === 'debit') d.postedDebits += leg.amountMinor;
    else d.postedCredits += leg.amountMinor;
    deltas.set(leg.accountId, d);
  }
  return deltas;
}
