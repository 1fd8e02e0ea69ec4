import { z } from 'zod';
import { byteaArray, sql, type DatabasePool } from '../pool';
import type { Tx } from './context';
import { accountRow, SIDES, type Side } from './accounts';

/** The states of the table's CHECK. */
export const TRANSACTION_STATES = ['pending', 'committed', 'voided', 'expired'] as const;
export type TransactionState = (typeof TRANSACTION_STATES)[number];

export const postingAccountRow = accountRow.pick({
  account_id: true,
  asset_type_id: true,
  normal_side: true,
  status: true,
  balance_tracking: true,
  floor_minor: true,
  scale: true,
});
export type PostingAccountRow = z.infer<typeof postingAccountRow>;

export const lockedBalanceRow = z.object({
  account_id: z.string(),
  status: accountRow.shape.status,
  /** numeric: decimal strings. */
  floor_minor: z.string().nullable(),
  posted_debits: z.string(),
  posted_credits: z.string(),
  pending_debits: z.string(),
  pending_credits: z.string(),
});
export type LockedBalanceRow = z.infer<typeof lockedBalanceRow>;

export interface NewEntry {
  entryId: string;
  accountId: string;
  assetTypeId: string;
  lineNo: number;
  direction: Side;
  amountMinor: bigint;
}

const postingAccountNowRow = postingAccountRow.extend({ now: z.string() });

/** Account facts a posting needs, unlocked (tracking, side, scale never change). */
export async function readPostingAccounts(
  tx: Tx,
  accountIds: string[],
): Promise<readonly (PostingAccountRow & { now: string })[]> {
  return tx.any(sql.type(postingAccountNowRow)`
    SELECT a.account_id, a.asset_type_id, a.normal_side, a.status, a.balance_tracking, a.floor_minor, t.scale,
           ledger.now_ms() AS now
    FROM ledger.accounts a JOIN ledger.asset_types t USING (asset_type_id)
    WHERE a.account_id = ANY(${sql.array(accountIds, 'uuid')})`);
}

/**
 * Locks the accounts and balance rows of sync accounts in account_id order (the one lock
 * order of the ledger, so postings never deadlock) and returns the current counters.
 */
export async function lockSyncBalances(
  tx: Tx,
  accountIds: string[],
): Promise<readonly LockedBalanceRow[]> {
  if (accountIds.length === 0) return [];
  return tx.any(sql.type(lockedBalanceRow)`
    SELECT a.account_id, a.status, a.floor_minor, b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits
    FROM ledger.accounts a JOIN ledger.balances b USING (account_id)
    WHERE a.account_id = ANY(${sql.array(accountIds, 'uuid')})
    ORDER BY a.account_id
    FOR UPDATE OF a, b`);
}

/** Copies a hold's legs into committed_legs when it commits. */
export async function insertCommittedLegs(tx: Tx, transactionId: string): Promise<void> {
  await tx.query(sql.unsafe`
    INSERT INTO ledger.committed_legs (entry_id, tenant_id, account_id, effective_at, finalized_at, debit_minor, credit_minor)
    SELECT e.entry_id, e.tenant_id, e.account_id, t.effective_at, t.finalized_at,
           CASE WHEN e.direction = 'debit' THEN e.amount_minor ELSE 0 END,
           CASE WHEN e.direction = 'credit' THEN e.amount_minor ELSE 0 END
    FROM ledger.entries e JOIN ledger.transactions t USING (transaction_id)
    WHERE e.transaction_id = ${transactionId}`);
}

export interface BalanceDelta {
  accountId: string;
  postedDebits: bigint;
  postedCredits: bigint;
  pendingDebits: bigint;
  pendingCredits: bigint;
}

/** Moves every sync account's counters in one statement (rows already locked). */
export async function applyBalanceDeltas(tx: Tx, deltas: BalanceDelta[]): Promise<void> {
  if (deltas.length === 0) return;
  const tuples = deltas.map((d) => [
    d.accountId,
    d.postedDebits.toString(),
    d.postedCredits.toString(),
    d.pendingDebits.toString(),
    d.pendingCredits.toString(),
  ]);
  await tx.query(sql.unsafe`
    UPDATE ledger.balances b
    SET posted_debits = b.posted_debits + d.pd, posted_credits = b.posted_credits + d.pc,
        pending_debits = b.pending_debits + d.hd, pending_credits = b.pending_credits + d.hc,
        version = b.version + 1
    FROM ${sql.unnest(tuples, ['uuid', 'numeric', 'numeric', 'numeric', 'numeric'])} AS d(account_id, pd, pc, hd, hc)
    WHERE b.account_id = d.account_id`);
}

const TRANSACTION_COLUMNS = sql.fragment`transaction_id, tenant_id, state, pending, description, external_id, metadata,
  effective_at, expires_at, created_at, finalized_at, (expires_at IS NOT NULL AND expires_at <= now()) AS past_expiry`;
export const transactionRow = z.object({
  transaction_id: z.string(),
  tenant_id: z.string(),
  state: z.enum(TRANSACTION_STATES),
  pending: z.boolean(),
  description: z.string().nullable(),
  external_id: z.string().nullable(),
  metadata: z.record(z.unknown()),
  effective_at: z.string(),
  expires_at: z.string().nullable(),
  created_at: z.string(),
  finalized_at: z.string().nullable(),
  /** True when expires_at has passed by the database clock. */
  past_expiry: z.boolean(),
});
export type TransactionRow = z.infer<typeof transactionRow>;

export async function findTransaction(
  tx: Tx,
  transactionId: string,
  forUpdate = false,
): Promise<TransactionRow | null> {
  return tx.maybeOne(sql.type(transactionRow)`
    SELECT ${TRANSACTION_COLUMNS} FROM ledger.transactions WHERE transaction_id = ${transactionId}
    ${forUpdate ? sql.fragment`FOR UPDATE` : sql.fragment``}`);
}

/** A pending transaction past its expires_at, as the hold sweep reads it. */
export const dueHold = z.object({
  transaction_id: z.string(),
  tenant_id: z.string(),
  /** expires_at as Postgres prints it (full precision): the keyset cursor's first half. */
  expires_at: z.string(),
});
export type DueHold = z.infer<typeof dueHold>;

/**
 * Holds past their expires_at in every tenant (system context), oldest first, after `after` in
 * (expires_at, transaction_id) order: a sweep pages through them however many there are.
 */
export async function readDueHolds(
  tx: Tx,
  after: DueHold | null,
  limit: number,
): Promise<readonly DueHold[]> {
  const cursor = after
    ? sql.fragment`AND (expires_at, transaction_id) > (${after.expires_at}::timestamptz, ${after.transaction_id}::uuid)`
    : sql.fragment``;
  return tx.any(sql.type(dueHold)`
    SELECT transaction_id, tenant_id, expires_at::text AS expires_at FROM ledger.transactions
    WHERE state = 'pending' AND expires_at <= now() ${cursor}
    ORDER BY expires_at, transaction_id LIMIT ${limit}`);
}

export const entryRow = z.object({
  id: z.string(),
  transaction_id: z.string(),
  account_id: z.string(),
  asset_type_id: z.string(),
  direction: z.enum(SIDES),
  /** numeric: a decimal string. */
  amount_minor: z.string(),
  /** The asset type's code and scale. */
  code: z.string(),
  scale: z.number(),
  line_no: z.number(),
  created_at: z.string(),
});
export type EntryRow = z.infer<typeof entryRow>;

export async function findEntries(tx: Tx, transactionId: string): Promise<readonly EntryRow[]> {
  return tx.any(sql.type(entryRow)`
    SELECT e.entry_id AS id, e.transaction_id, e.account_id, e.asset_type_id, e.direction, e.amount_minor, t.code, t.scale, e.line_no, e.created_at
    FROM ledger.entries e JOIN ledger.asset_types t USING (asset_type_id)
    WHERE e.transaction_id = ${transactionId} ORDER BY e.line_no`);
}

const finalizedAt = z.object({ finalized_at: z.string() });

/** Conditional: only a pending transaction moves; returns false when it was already final. */
export async function finalizeTransaction(
  tx: Tx,
  transactionId: string,
  state: Exclude<TransactionState, 'pending'>,
): Promise<string | null> {
  return tx.maybeOneFirst(sql.type(finalizedAt)`
    UPDATE ledger.transactions SET state = ${state}, finalized_at = ledger.now_ms()
    WHERE transaction_id = ${transactionId} AND state = 'pending'
    RETURNING finalized_at`);
}

export interface PostingCall {
  tenantId: string;
  lockTimeout: string;
  transactionId: string;
  pending: boolean;
  description: string | null;
  externalId: string | null;
  metadata: unknown;
  /** Null: the posting's own clock (created_at). */
  effectiveAt: string | null;
  expiresAt: string | null;
  entries: { entryId: string; accountId: string; direction: Side; amount: string }[];
  /** The claimed idempotency key completed in the same statement (atomic with the posting). */
  idempotency?: { endpoint: string; key: string; status: number };
}

/*
 * The posting functions answer jsonb, whose objects keep their keys shortest first, then in byte
 * order: the schemas below list them so, and the 201 body keeps the key order of the one recorded
 * for a replay (ledger.posting_body, posting_check, posting_prepare).
 */

export const postingRefusal = z.object({
  code: z.string(),
  details: z.unknown(),
  message: z.string(),
});
export type PostingRefusal = z.infer<typeof postingRefusal>;

export const postedBody = z.object({
  state: z.enum(TRANSACTION_STATES),
  accounts: z.array(
    z.object({
      account_id: z.string(),
      available_after: z.string(),
      available_after_minor: z.string(),
    }),
  ),
  created_at: z.string(),
  transaction_id: z.string(),
});
export type PostedBody = z.infer<typeof postedBody>;

/** What a posting gets: the 201 body it recorded, or its refusal (nothing written). */
export const postingResult = z.union([
  z.object({ body: postedBody }),
  z.object({ error: postingRefusal }),
]);
export type PostingResult = z.infer<typeof postingResult>;

const postTransactionRow = z.object({ post_transaction: postingResult });

/**
 * The whole posting in one statement, its own implicit transaction (ledger.post_transaction,
 * migration 0004): context, locks, rules 1-4, writes and the idempotency record. Returns the
 * 201 body it recorded, or the refusal (nothing written).
 */
export async function postTransaction(pool: DatabasePool, c: PostingCall): Promise<PostingResult> {
  const idem = c.idempotency;
  return pool.oneFirst(sql.type(postTransactionRow)`
    SELECT ledger.post_transaction(
      ${c.tenantId}::uuid, ${c.lockTimeout}, ${c.transactionId}::uuid, ${c.pending}, ${c.description}, ${c.externalId},
      ${sql.jsonb(c.metadata as never)}, ${c.effectiveAt}::timestamptz, ${c.expiresAt}::timestamptz,
      ${sql.array(
        c.entries.map((e) => e.entryId),
        'uuid',
      )}, ${sql.array(
        c.entries.map((e) => e.accountId),
        'uuid',
      )},
      ${sql.array(
        c.entries.map((e) => e.direction),
        'text',
      )}, ${sql.array(
        c.entries.map((e) => e.amount),
        'text',
      )},
      ${idem?.endpoint ?? null}, ${idem?.key ?? null}, ${idem?.status ?? null}::smallint)`);
}

/** The posting arrays of ledger.post_transactions (migration 0009), one per field, in call order. */
function postingArrays(calls: PostingCall[]) {
  const entries = calls.flatMap((c) => c.entries);
  return sql.join(
    [
      sql.array(
        calls.map((c) => c.transactionId),
        'uuid',
      ),
      sql.array(
        calls.map((c) => c.pending),
        'bool',
      ),
      sql.array(
        calls.map((c) => c.description),
        'text',
      ),
      sql.array(
        calls.map((c) => c.externalId),
        'text',
      ),
      sql.array(
        calls.map((c) => JSON.stringify(c.metadata ?? {})),
        'jsonb',
      ),
      sql.array(
        calls.map((c) => c.effectiveAt),
        'timestamptz',
      ),
      sql.array(
        calls.map((c) => c.expiresAt),
        'timestamptz',
      ),
      sql.array(
        calls.map((c) => c.entries.length),
        'int4',
      ),
      sql.array(
        entries.map((e) => e.entryId),
        'uuid',
      ),
      sql.array(
        entries.map((e) => e.accountId),
        'uuid',
      ),
      sql.array(
        entries.map((e) => e.direction),
        'text',
      ),
      sql.array(
        entries.map((e) => e.amount),
        'text',
      ),
    ],
    sql.fragment`, `,
  );
}

/** jsonb_agg: null for no postings. */
const postTransactionsRow = z.object({ post_transactions: z.array(postingResult).nullable() });

function checkAnswered<T>(results: T[] | null, calls: unknown[], fn: string): T[] {
  if (!Array.isArray(results) || results.length !== calls.length)
    throw new Error(`${fn} answered ${String(results?.length)} of ${calls.length}`);
  return results;
}

/**
 * Several postings of one tenant in one statement and one database transaction
 * (ledger.post_transactions, migrations 0009 and 0012): every posting gets exactly what postTransaction
 * would give it alone, in order, each seeing the counters the ones before it left. Throws when
 * the statement fails as a whole (an unexpected error of any one posting); the caller then posts
 * them alone.
 */
export async function postTransactions(
  pool: DatabasePool,
  tenantId: string,
  lockTimeout: string,
  calls: PostingCall[],
): Promise<PostingResult[]> {
  const results = await pool.oneFirst(sql.type(postTransactionsRow)`
    SELECT ledger.post_transactions(
      ${tenantId}::uuid, ${lockTimeout}, ${postingArrays(calls)},
      ${sql.array(
        calls.map((c) => c.idempotency?.endpoint ?? null),
        'text',
      )},
      ${sql.array(
        calls.map((c) => c.idempotency?.key ?? null),
        'text',
      )},
      ${sql.array(
        calls.map((c) => c.idempotency?.status ?? null),
        'int2',
      )})`);
  return checkAnswered(results, calls, 'post_transactions');
}

/** A posting sent with a key authenticated before, and the Idempotency-Key it claims. */
export interface AuthorizedPostingCall extends Omit<PostingCall, 'idempotency'> {
  keyId: string;
  secretSha256: Buffer;
  idempotencyKey: string;
  requestSha256: Buffer;
}

/**
 * Why a posting was not posted by postTransactionsAuthorized, nothing written for it: its key no
 * longer passes (revoked, expired, suspended tenant), or its Idempotency-Key already has a row.
 */
export const authorizedPostingResult = z.union([
  z.object({ body: postedBody }),
  z.object({ error: postingRefusal }),
  z.object({ fallback: z.enum(['credential', 'key']) }),
]);
export type AuthorizedPostingResult = z.infer<typeof authorizedPostingResult>;

/** jsonb_agg: null for no postings. */
const postTransactionsAuthorizedRow = z.object({
  post_transactions_authorized: z.array(authorizedPostingResult).nullable(),
});

/**
 * Postings of one tenant with the checks of their keys and the claims of their Idempotency-Keys
 * in one statement and one commit (ledger.post_transactions_authorized, migration 0013). A
 * refused posting's key stays claimed in flight; a fallback posting has nothing written.
 */
export async function postTransactionsAuthorized(
  pool: DatabasePool,
  tenantId: string,
  scope: { lockTimeout: string; role: string; endpoint: string; lockMs: number; status: number },
  calls: AuthorizedPostingCall[],
): Promise<AuthorizedPostingResult[]> {
  const results = await pool.oneFirst(sql.type(postTransactionsAuthorizedRow)`
    SELECT ledger.post_transactions_authorized(
      ${tenantId}::uuid, ${scope.lockTimeout}, ${scope.role}, ${scope.endpoint}, ${scope.lockMs}::int,
      ${scope.status}::smallint,
      ${sql.array(
        calls.map((c) => c.keyId),
        'uuid',
      )},
      ${byteaArray(calls.map((c) => c.secretSha256))},
      ${sql.array(
        calls.map((c) => c.idempotencyKey),
        'text',
      )},
      ${byteaArray(calls.map((c) => c.requestSha256))},
      ${postingArrays(calls as PostingCall[])})`);
  return checkAnswered(results, calls, 'post_transactions_authorized');
}

const accountEntryRow = z.object({
  /** The entry's id. */
  id: z.string(),
  transaction_id: z.string(),
  account_id: z.string(),
  direction: z.enum(SIDES),
  /** numeric: a decimal string. */
  amount_minor: z.string(),
  line_no: z.number(),
  created_at: z.string(),
  transaction_state: z.enum(TRANSACTION_STATES),
  finalized_at: z.string().nullable(),
});
export type AccountEntryRow = z.infer<typeof accountEntryRow>;

/**
 * An account's legs with their transaction's state, newest first (by entry_id), before
 * `cursor` when given, of transactions in `state` when given, at most `limit`.
 */
export async function listAccountEntries(
  tx: Tx,
  accountId: string,
  w: { cursor: string | null; state: TransactionState | null; limit: number },
): Promise<AccountEntryRow[]> {
  const rows = await tx.any(sql.type(accountEntryRow)`
    SELECT e.entry_id AS id, e.transaction_id, e.account_id, e.direction, e.amount_minor, e.line_no, e.created_at,
           t.state AS transaction_state, t.finalized_at
    FROM ledger.entries e JOIN ledger.transactions t USING (transaction_id)
    WHERE e.account_id = ${accountId}
      AND (${w.cursor}::uuid IS NULL OR e.entry_id < ${w.cursor}::uuid)
      AND (${w.state}::text IS NULL OR t.state = ${w.state})
    ORDER BY e.entry_id DESC LIMIT ${w.limit}`);
  return [...rows];
}
