import { z } from 'zod';
import { sql, type DatabasePool } from '../pool';
import type { Tx } from './context';

const assetKind = z.enum(['fiat', 'credit', 'inventory']);
export type AssetKind = z.infer<typeof assetKind>;
const assetStatus = z.enum(['active', 'superseded']);
export type AssetStatus = z.infer<typeof assetStatus>;
export const SIDES = ['debit', 'credit'] as const;
export type Side = (typeof SIDES)[number];
const accountStatus = z.enum(['active', 'frozen', 'closed']);
export type AccountStatus = z.infer<typeof accountStatus>;
export const TRACKINGS = ['sync', 'async'] as const;
export type Tracking = (typeof TRACKINGS)[number];

const ASSET_COLUMNS = sql.fragment`asset_type_id, code, kind, scale, status, description, created_at`;
export const assetTypeRow = z.object({
  asset_type_id: z.string(),
  code: z.string(),
  kind: assetKind,
  scale: z.number(),
  status: assetStatus,
  description: z.string().nullable(),
  created_at: z.string(),
});
export type AssetTypeRow = z.infer<typeof assetTypeRow>;

const ACCOUNT_COLUMNS = sql.fragment`a.account_id, a.asset_type_id, a.name, a.normal_side, a.status, a.balance_tracking,
  a.floor_minor, a.metadata, t.scale, a.created_at`;
export const accountRow = z.object({
  account_id: z.string(),
  asset_type_id: z.string(),
  name: z.string(),
  normal_side: z.enum(SIDES),
  status: accountStatus,
  balance_tracking: z.enum(TRACKINGS),
  /** numeric: a decimal string; null: unbounded. */
  floor_minor: z.string().nullable(),
  metadata: z.record(z.unknown()),
  /** The asset type's. */
  scale: z.number(),
  created_at: z.string(),
});
export type AccountRow = z.infer<typeof accountRow>;

export const balanceRow = z.object({
  account_id: z.string(),
  /** numeric: decimal strings. */
  posted_debits: z.string(),
  posted_credits: z.string(),
  pending_debits: z.string(),
  pending_credits: z.string(),
  /** bigint: a decimal string. */
  version: z.string(),
  rolled_up_at: z.string().nullable(),
});
export type BalanceRow = z.infer<typeof balanceRow>;

export async function insertAssetType(
  tx: Tx,
  row: {
    assetTypeId: string;
    tenantId: string;
    code: string;
    kind: AssetKind;
    scale: number;
    description: string | null;
  },
): Promise<AssetTypeRow> {
  return tx.one(sql.type(assetTypeRow)`
    INSERT INTO ledger.asset_types (asset_type_id, tenant_id, code, kind, scale, description)
    VALUES (${row.assetTypeId}, ${row.tenantId}, ${row.code}, ${row.kind}, ${row.scale}, ${row.description})
    RETURNING ${ASSET_COLUMNS}`);
}

export async function listAssetTypes(tx: Tx): Promise<readonly AssetTypeRow[]> {
  return tx.any(
    sql.type(
      assetTypeRow,
    )`SELECT ${ASSET_COLUMNS} FROM ledger.asset_types ORDER BY asset_type_id DESC`,
  );
}

export async function findAssetType(
  tx: Tx,
  assetTypeId: string,
  forUpdate = false,
): Promise<AssetTypeRow | null> {
  return tx.maybeOne(sql.type(assetTypeRow)`
    SELECT ${ASSET_COLUMNS} FROM ledger.asset_types WHERE asset_type_id = ${assetTypeId}
    ${forUpdate ? sql.fragment`FOR UPDATE` : sql.fragment``}`);
}

export async function updateAssetType(
  tx: Tx,
  assetTypeId: string,
  patch: { status?: AssetStatus; description?: string | null },
): Promise<AssetTypeRow> {
  const description =
    patch.description === undefined
      ? sql.fragment`description`
      : sql.fragment`${patch.description}`;
  return tx.one(sql.type(assetTypeRow)`
    UPDATE ledger.asset_types SET status = coalesce(${patch.status ?? null}, status), description = ${description}
    WHERE asset_type_id = ${assetTypeId}
    RETURNING ${ASSET_COLUMNS}`);
}

export async function insertAccount(
  tx: Tx,
  row: {
    accountId: string;
    tenantId: string;
    assetTypeId: string;
    name: string;
    normalSide: Side;
    floorMinor: bigint | null;
    tracking: Tracking;
    metadata: unknown;
  },
): Promise<void> {
  await tx.query(sql.unsafe`
    WITH account AS (
      INSERT INTO ledger.accounts (account_id, tenant_id, asset_type_id, name, normal_side, floor_minor, balance_tracking, metadata)
      VALUES (${row.accountId}, ${row.tenantId}, ${row.assetTypeId}, ${row.name}, ${row.normalSide},
              ${row.floorMinor === null ? null : row.floorMinor.toString()}::numeric, ${row.tracking}, ${sql.jsonb(row.metadata as never)})
      RETURNING account_id, tenant_id)
    INSERT INTO ledger.balances (account_id, tenant_id, rolled_up_at)
    SELECT account_id, tenant_id, CASE WHEN ${row.tracking} = 'async' THEN ledger.now_ms() END FROM account`);
}

export async function findAccount(tx: Tx, accountId: string): Promise<AccountRow | null> {
  return tx.maybeOne(sql.type(accountRow)`
    SELECT ${ACCOUNT_COLUMNS} FROM ledger.accounts a JOIN ledger.asset_types t USING (asset_type_id)
    WHERE a.account_id = ${accountId}`);
}

/** ACCOUNT_COLUMNS, then the balance row's columns but its account_id. */
const lockedAccountRow = accountRow.extend(balanceRow.omit({ account_id: true }).shape);

/** The account and its balance row, both locked (the same order postings use: one account). */
export async function lockAccount(
  tx: Tx,
  accountId: string,
): Promise<(AccountRow & BalanceRow) | null> {
  return tx.maybeOne(sql.type(lockedAccountRow)`
    SELECT ${ACCOUNT_COLUMNS}, b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits, b.version, b.rolled_up_at
    FROM ledger.accounts a JOIN ledger.asset_types t USING (asset_type_id) JOIN ledger.balances b USING (account_id)
    WHERE a.account_id = ${accountId}
    FOR UPDATE OF a, b`);
}

export async function listAccounts(
  tx: Tx,
  limit: number,
  cursor: string | null,
): Promise<readonly AccountRow[]> {
  return tx.any(sql.type(accountRow)`
    SELECT ${ACCOUNT_COLUMNS} FROM ledger.accounts a JOIN ledger.asset_types t USING (asset_type_id)
    WHERE (${cursor}::uuid IS NULL OR a.account_id < ${cursor}::uuid)
    ORDER BY a.account_id DESC LIMIT ${limit}`);
}

export async function updateAccount(
  tx: Tx,
  accountId: string,
  patch: { name?: string; metadata?: unknown; status?: AccountStatus; floorMinor?: bigint | null },
): Promise<void> {
  const floor =
    patch.floorMinor === undefined
      ? sql.fragment`floor_minor`
      : sql.fragment`${patch.floorMinor === null ? null : patch.floorMinor.toString()}::numeric`;
  const metadata =
    patch.metadata === undefined
      ? sql.fragment`metadata`
      : sql.fragment`${sql.jsonb(patch.metadata as never)}`;
  await tx.query(sql.unsafe`
    UPDATE ledger.accounts
    SET name = coalesce(${patch.name ?? null}, name), status = coalesce(${patch.status ?? null}, status),
        floor_minor = ${floor}, metadata = ${metadata}
    WHERE account_id = ${accountId}`);
}

const balanceNowRow = balanceRow.extend({
  /** The instant the row is exact as of. */
  as_of: z.string(),
  /** bigint: a decimal string. */
  queued_deltas: z.string(),
});

/**
 * The balance row and the instant it is exact as of, read in one snapshot with the account's
 * queued deltas (ledger.account_balance, migration 0008). Sync rows are always current (now);
 * an async row holds every change acknowledged before `as_of` (see the README).
 */
export async function findBalance(
  tx: Tx,
  accountId: string,
): Promise<(BalanceRow & { as_of: string; queued_deltas: string }) | null> {
  return tx.maybeOne(sql.type(balanceNowRow)`
    SELECT account_id, posted_debits, posted_credits, pending_debits, pending_credits, version, rolled_up_at,
           as_of, queued_deltas
    FROM ledger.account_balance(${accountId})`);
}

/** Queued deltas applied per rollup statement; a full batch is followed by another at once. */
export const ROLLUP_BATCH_ROWS = 5_000;

export const rollupBatch = z.object({
  accounts: z.number(),
  deltas: z.number(),
  full_batch: z.boolean(),
});
export type RollupBatch = z.infer<typeof rollupBatch>;

/**
 * One rollup batch (ledger.rollup_async_balances, migration 0008): up to `rows` queued deltas
 * of async accounts, oldest first, deleted and added to their balance rows in one statement.
 * Safe to run from every API process at once: accounts are claimed with SKIP LOCKED and a
 * delta is applied by the transaction that deletes it, so never twice and never lost.
 */
export async function rollupAsyncBalances(
  pool: DatabasePool,
  rows = ROLLUP_BATCH_ROWS,
): Promise<RollupBatch> {
  return pool.one(
    sql.type(
      rollupBatch,
    )`SELECT accounts, deltas, full_batch FROM ledger.rollup_async_balances(${rows}::integer)`,
  );
}

/** Batches until the queue is empty (for this consumer) or `budgetMs` has passed. */
export async function drainAsyncBalances(
  pool: DatabasePool,
  budgetMs: number,
  rows = ROLLUP_BATCH_ROWS,
): Promise<{ batches: number; accounts: number; deltas: number }> {
  const deadline = Date.now() + budgetMs;
  const total = { batches: 0, accounts: 0, deltas: 0 };
  for (;;) {
    const batch = await rollupAsyncBalances(pool, rows);
    total.batches++;
    total.accounts += batch.accounts;
    total.deltas += batch.deltas;
    if (!batch.full_batch || Date.now() >= deadline) return total;
  }
}

const rebuiltBalances = z.object({
  accounts: z.number(),
  drifted: z.number(),
  dropped_deltas: z.number(),
});

/**
 * Repair: async balance rows recomputed from the whole journal and their queued deltas dropped
 * (ledger.rebuild_async_balances). `drifted` counts accounts whose row plus queued deltas did
 * not match the journal. Cost grows with the journal: an operator command, not a loop.
 */
export async function rebuildAsyncBalances(
  pool: DatabasePool,
  tenantId: string | null = null,
): Promise<{ accounts: number; drifted: number; dropped_deltas: number }> {
  // The API's statement budget is for requests; summing a large journal takes longer.
  return pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT set_config('statement_timeout', '0', true)`);
    return tx.one(sql.type(rebuiltBalances)`
      SELECT accounts, drifted, dropped_deltas FROM ledger.rebuild_async_balances(${tenantId}::uuid)`);
  });
}

const balanceAsOfRow = z.object({
  normal_side: z.enum(SIDES),
  scale: z.number(),
  balance_tracking: z.enum(TRACKINGS),
  /** numeric: decimal strings. */
  debits: z.string(),
  credits: z.string(),
  entry_count: z.string(),
});
export type BalanceAsOfRow = z.infer<typeof balanceAsOfRow>;

/**
 * One statement (migration 0007, ledger.balance_as_of): the tenant context, the account, and its
 * committed sums as of `at` by `basis` from the as-of buckets (sync) or the journal (async); null
 * when the account is not the tenant's. On the pool: its own transaction.
 */
export async function balanceAsOf(
  db: Pick<DatabasePool, 'maybeOne'>,
  tenantId: string,
  accountId: string,
  basis: 'effective' | 'recorded',
  at: string,
): Promise<BalanceAsOfRow | null> {
  return db.maybeOne(sql.type(balanceAsOfRow)`
    SELECT * FROM ledger.balance_as_of(${tenantId}::uuid, ${accountId}::uuid, ${basis}, ${at}::timestamptz)`);
}
