import { AppError } from '../platform/errors';
import type { Side } from '../../db/ledger/accounts';

/** Pure posting rules (no I/O), shared by the routes, the property test and the bench. */

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

export interface SyncAccountState extends Counters {
  accountId: string;
  normalSide: Side;
  floorMinor: bigint | null;
}

export const ZERO_COUNTERS: Counters = {
  postedDebits: 0n,
  postedCredits: 0n,
  pendingDebits: 0n,
  pendingCredits: 0n,
};

/** Rule 1: per asset type, debits equal credits and both sides are present. */
export function assertBalanced(legs: Leg[]): void {
  const sums = new Map<string, { debits: bigint; credits: bigint }>();
  for (const leg of legs) {
    const sum = sums.get(leg.assetTypeId) ?? { debits: 0n, credits: 0n };
    if (leg.direction === 'debit') sum.debits += leg.amountMinor;
    else sum.credits += leg.amountMinor;
    sums.set(leg.assetTypeId, sum);
  }
  const unbalanced = [...sums].filter(([, s]) => s.debits !== s.credits || s.debits === 0n);
  if (unbalanced.length > 0) {
    throw new AppError({
      status: 422,
      code: 'UNBALANCED_TRANSACTION',
      message: 'debits must equal credits per asset type, with both sides present',
      details: unbalanced.map(([assetTypeId, s]) => ({
        asset_type_id: assetTypeId,
        debits_minor: s.debits.toString(),
        credits_minor: s.credits.toString(),
      })),
    });
  }
}

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

export const addCounters = (a: Counters, b: Counters): Counters => ({
  postedDebits: a.postedDebits + b.postedDebits,
  postedCredits: a.postedCredits + b.postedCredits,
  pendingDebits: a.pendingDebits + b.pendingDebits,
  pendingCredits: a.pendingCredits + b.pendingCredits,
});

/**
 * Rules 2–4: each sync account is tested once, on the net of the whole transaction, and
 * only when the transaction lowers its available balance (a deposit into an account that
 * sits below a floor is never refused). Returns available-after per sync account.
 */
export function checkFloors(
  accounts: SyncAccountState[],
  deltas: Map<string, Counters>,
): Map<string, bigint> {
  const after = new Map<string, bigint>();
  for (const account of accounts) {
    const delta = deltas.get(account.accountId) ?? ZERO_COUNTERS;
    const before = availableBalance(account.normalSide, account);
    const next = availableBalance(account.normalSide, addCounters(account, delta));
    if (account.floorMinor !== null && next < before && next < account.floorMinor) {
      throw new AppError({
        status: 422,
        code: 'INSUFFICIENT_AVAILABLE',
        message: `account ${account.accountId} would fall below its balance floor`,
        details: {
          account_id: account.accountId,
          available_minor: before.toString(),
          available_after_minor: next.toString(),
          balance_floor_minor: account.floorMinor.toString(),
        },
      });
    }
    after.set(account.accountId, next);
  }
  return after;
}
