import { v7 as uuidv7 } from 'uuid';
import { ledgerError } from './errors';
import type { DatabasePool } from '../../db/pool';
import { mapDatabaseError, withTenant } from '../../db/ledger/context';
import {
  balanceAsOf,
  findAccount,
  findAssetType,
  findBalance,
  insertAccount,
  listAccounts,
  lockAccount,
  updateAccount,
  type AccountRow,
  type AccountStatus,
  type BalanceRow,
  type BalanceAsOfRow,
  type Side,
  type Tracking,
} from '../../db/ledger/accounts';
import { listAccountEntries } from '../../db/ledger/transactions';
import { floorToMinor, minorToDecimal } from './money';
import { availableBalance, postedBalance, type Counters } from './posting';
import { invalid, isUuid, pageOf, type Page } from './validation';

export const accountNotFound = () =>
  ledgerError('ACCOUNT_NOT_FOUND', { message: 'account not found' });
const notFound = accountNotFound;

export function presentAccount(a: AccountRow) {
  return {
    account_id: a.account_id,
    asset_type_id: a.asset_type_id,
    name: a.name,
    normal_side: a.normal_side,
    status: a.status,
    balance_tracking: a.balance_tracking,
    balance_floor: a.floor_minor === null ? null : minorToDecimal(a.floor_minor, a.scale),
    balance_floor_minor: a.floor_minor,
    scale: a.scale,
    metadata: a.metadata,
    created_at: a.created_at,
  };
}

/** A request validated by routes/accounts.ts (ACCOUNT_CREATE); the floor is judged here. */
export interface AccountInput {
  asset_type_id: string;
  name?: string;
  normal_side: Side;
  balance_floor?: unknown;
  balance_tracking?: Tracking;
  metadata?: Record<string, unknown>;
}

export async function createAccount(pool: DatabasePool, tenantId: string, input: AccountInput) {
  const name = input.name ?? '';
  const metadata = input.metadata ?? {};
  const tracking = input.balance_tracking ?? 'sync';
  if (tracking === 'async' && input.balance_floor !== undefined && input.balance_floor !== null) {
    throw invalid('INVALID_FLOOR', 'an async account cannot have a balance floor');
  }
  return withTenant(pool, tenantId, async (tx) => {
    const assetType = isUuid(input.asset_type_id)
      ? await findAssetType(tx, input.asset_type_id)
      : null;
    if (!assetType) {
      throw ledgerError('REFERENCE_NOT_FOUND', {
        message: 'asset type not found',
        details: { asset_type_id: input.asset_type_id },
      });
    }
    if (assetType.status === 'superseded') {
      throw ledgerError('ASSET_TYPE_SUPERSEDED', {
        message: `asset type ${assetType.code} is superseded`,
      });
    }
    const floorMinor =
      tracking === 'async' ? null : floorToMinor(input.balance_floor, assetType.scale);
    const accountId = uuidv7();
    await insertAccount(tx, {
      accountId,
      tenantId,
      assetTypeId: assetType.asset_type_id,
      name,
      normalSide: input.normal_side,
      floorMinor,
      tracking,
      metadata,
    });
    return presentAccount((await findAccount(tx, accountId))!);
  });
}

export async function getAccount(pool: DatabasePool, tenantId: string, accountId: string) {
  if (!isUuid(accountId)) throw notFound();
  return withTenant(pool, tenantId, async (tx) => {
    const account = await findAccount(tx, accountId);
    if (!account) throw notFound();
    return presentAccount(account);
  });
}

export async function getAccounts(pool: DatabasePool, tenantId: string, page: Page) {
  const rows = await withTenant(pool, tenantId, (tx) =>
    listAccounts(tx, page.limit + 1, page.cursor),
  );
  const { items, next_cursor } = pageOf(rows, page.limit, (a) => a.account_id);
  return { accounts: items.map(presentAccount), next_cursor };
}

const countersOf = (b: BalanceRow): Counters => ({
  postedDebits: BigInt(b.posted_debits),
  postedCredits: BigInt(b.posted_credits),
  pendingDebits: BigInt(b.pending_debits),
  pendingCredits: BigInt(b.pending_credits),
});

/** A request validated by routes/accounts.ts (ACCOUNT_PATCH); the floor is judged here. */
export interface AccountPatch {
  name?: string;
  metadata?: Record<string, unknown>;
  status?: AccountStatus;
  balance_floor?: unknown;
}

/**
 * Name, metadata, status and floor. Closing needs a zero balance (nothing posted net, nothing
 * held); closed is final (decision: the spec leaves transitions out of closed open). A floor
 * may not be raised above the current available balance.
 */
export async function patchAccount(
  pool: DatabasePool,
  tenantId: string,
  accountId: string,
  patch: AccountPatch,
) {
  if (!isUuid(accountId)) throw notFound();
  const { name, metadata } = patch;
  return withTenant(pool, tenantId, async (tx) => {
    const account = await lockAccount(tx, accountId);
    if (!account) throw notFound();
    const counters = countersOf(account);
    if (
      account.status === 'closed' &&
      (patch.status !== undefined || patch.balance_floor !== undefined)
    ) {
      throw ledgerError('ACCOUNT_NOT_ACTIVE', {
        message: 'account is closed; closed is final',
        details: { account_id: accountId, status: 'closed' },
      });
    }
    if (
      patch.status === 'closed' &&
      (postedBalance(account.normal_side, counters) !== 0n ||
        counters.pendingDebits !== 0n ||
        counters.pendingCredits !== 0n)
    ) {
      throw ledgerError('CLOSE_REQUIRES_ZERO_BALANCE', {
        message: 'only an account with a zero balance and no holds can close',
      });
    }
    let floorMinor: bigint | null | undefined;
    if (patch.balance_floor !== undefined) {
      if (account.balance_tracking === 'async')
        throw invalid('INVALID_FLOOR', 'an async account cannot have a balance floor');
      floorMinor = floorToMinor(patch.balance_floor, account.scale);
      const available = availableBalance(account.normal_side, counters);
      const current = account.floor_minor === null ? null : BigInt(account.floor_minor);
      const raising = floorMinor !== null && (current === null || floorMinor > current);
      if (raising && floorMinor! > available) {
        throw invalid('INVALID_FLOOR', 'a floor cannot be raised above the available balance', {
          available_minor: available.toString(),
          balance_floor_minor: floorMinor!.toString(),
        });
      }
    }
    await updateAccount(tx, accountId, {
      name,
      metadata,
      status: patch.status,
      floorMinor,
    });
    return presentAccount((await findAccount(tx, accountId))!);
  });
}

function side(debits: bigint, credits: bigint, scale: number) {
  return {
    debits: minorToDecimal(debits, scale),
    credits: minorToDecimal(credits, scale),
    debits_minor: debits.toString(),
    credits_minor: credits.toString(),
  };
}

export async function getBalance(pool: DatabasePool, tenantId: string, accountId: string) {
  if (!isUuid(accountId)) throw notFound();
  return withTenant(pool, tenantId, async (tx) => {
    const account = await findAccount(tx, accountId);
    const balance = account && (await findBalance(tx, accountId));
    if (!account || !balance) throw notFound();
    // Sync: now. Async: every change acknowledged before as_of is in the counters (read in the
    // same snapshot as the account's queued deltas, migration 0008), later ones may be.
    const asOf = balance.as_of;
    const c = countersOf(balance);
    const available = availableBalance(account.normal_side, c);
    return {
      account_id: accountId,
      posted: side(c.postedDebits, c.postedCredits, account.scale),
      pending: side(c.pendingDebits, c.pendingCredits, account.scale),
      available: minorToDecimal(available, account.scale),
      available_minor: available.toString(),
      scale: account.scale,
      version: balance.version,
      balance_tracking: account.balance_tracking,
      as_of: asOf,
    };
  });
}

/** `at` (epoch ms) and `basis`, validated by routes/balances.ts (INVALID_AS_OF). */
export interface BalanceAsOfQuery {
  at: number;
  basis: 'effective' | 'recorded';
}

/** Rule 6: committed legs only, by effective_at or finalized_at, derived from the journal. */
export async function getBalanceAsOf(
  pool: DatabasePool,
  tenantId: string,
  accountId: string,
  query: BalanceAsOfQuery,
) {
  const { at: atMs, basis } = query;
  if (!isUuid(accountId)) throw notFound();
  const at = new Date(atMs).toISOString();
  if (!tenantId) {
    throw ledgerError('TENANT_CONTEXT_REQUIRED', { message: 'tenant context missing' });
  }
  // One statement (migration 0007): tenant context, the account, and its sum from the as-of
  // buckets (sync) or the journal (async); no row when the account is not the tenant's.
  let row: BalanceAsOfRow | null;
  try {
    row = await balanceAsOf(pool, tenantId, accountId, basis, at);
  } catch (error) {
    throw mapDatabaseError(error);
  }
  if (!row) throw notFound();
  const c = {
    postedDebits: BigInt(row.debits),
    postedCredits: BigInt(row.credits),
    pendingDebits: 0n,
    pendingCredits: 0n,
  };
  const balance = postedBalance(row.normal_side, c);
  return {
    account_id: accountId,
    as_of: at,
    basis,
    posted: side(c.postedDebits, c.postedCredits, row.scale),
    balance: minorToDecimal(balance, row.scale),
    balance_minor: balance.toString(),
    scale: row.scale,
    entry_count: Number(row.entry_count),
    balance_tracking: row.balance_tracking,
    derived_from: 'journal',
  };
}

export const ENTRY_STATES = ['pending', 'committed', 'voided', 'expired'] as const;

/** Rule 7: every leg, newest first; `state` narrows to one transaction state. */
export async function getEntries(
  pool: DatabasePool,
  tenantId: string,
  accountId: string,
  page: Page,
  state: (typeof ENTRY_STATES)[number] | undefined,
) {
  if (!isUuid(accountId)) throw notFound();
  return withTenant(pool, tenantId, async (tx) => {
    const account = await findAccount(tx, accountId);
    if (!account) throw notFound();
    const rows = await listAccountEntries(tx, accountId, {
      cursor: page.cursor,
      state: state ?? null,
      limit: page.limit + 1,
    });
    const { items, next_cursor } = pageOf(rows, page.limit, (e) => e.id);
    return {
      entries: items.map((e) => ({
        ...e,
        amount: minorToDecimal(e.amount_minor, account.scale),
        scale: account.scale,
      })),
      next_cursor,
    };
  });
}
