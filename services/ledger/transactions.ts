import { v7 as uuidv7 } from 'uuid';
import { LEDGER_ERRORS, ledgerError } from './errors';
import { UniqueIntegrityConstraintViolationError } from 'slonik';
import type { DatabasePool } from '../../db/pool';
import { LOCK_TIMEOUT_MS, mapDatabaseError, withTenant } from '../../db/ledger/context';
import {
  applyBalanceDeltas,
  findEntries,
  findTransaction,
  finalizeTransaction,
  insertCommittedLegs,
  lockSyncBalances,
  postTransaction,
  postTransactions,
  postTransactionsAuthorized,
  readPostingAccounts,
  type AuthorizedPostingCall,
  type AuthorizedPostingResult,
  type PostingCall,
  type PostingResult,
  type EntryRow,
  type PostedBody,
  type PostingRefusal,
  type TransactionRow,
  type TransactionState,
} from '../../db/ledger/transactions';
import { isCatalogueCode, type DomainError } from '../../platform/errors';
import { NaturalBatcher } from '../../platform/batching';
import { observePostingFlight } from './metrics';
import { IDEMPOTENCY_LOCK_MS } from '../../db/ledger/idempotency';
import { minorToDecimal } from './money';
import { deltasOf, type Counters, type Leg } from './posting';
import { parseInstantWithOffset } from '../../platform/instant';
import canonicalize from 'canonicalize';
import type { LedgerErrorCode } from './errors';
import { invalid, isUuid, LIMITS } from './validation';

export interface TransactionInput {
  description?: unknown;
  pending?: unknown;
  expires_at?: unknown;
  effective_at?: unknown;
  external_id?: unknown;
  metadata?: unknown;
  entries?: unknown;
}

interface EntryInput {
  account_id: string;
  direction: 'debit' | 'credit';
  amount: string;
}

/** A hold can last at most this long (one year): expiry is a timer, not a parking lot. */
export const HOLD_DURATION_MAX_MS = 366 * 24 * 3600 * 1000;

const notFound = () => ledgerError('TRANSACTION_NOT_FOUND', { message: 'transaction not found' });

/** A frozen account thaws (a retry may succeed in a few seconds); a closed one stays closed. */
const FROZEN_RETRY_AFTER_SECONDS = 5;

function accountNotActive(accountId: string, status: string): DomainError {
  return ledgerError('ACCOUNT_NOT_ACTIVE', {
    message: `account ${accountId} is ${status}`,
    details: { account_id: accountId, status },
    retryAfterSeconds: status === 'frozen' ? FROZEN_RETRY_AFTER_SECONDS : undefined,
  });
}

// The one-statement path's hand reading of a posting body (parseTransaction), below.

/** metadata: a JSON object of at most 16 KiB in RFC 8785 canonical form. */
function checkMetadata(value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalid('INVALID_METADATA', 'metadata must be a JSON object');
  }
  const canonical = canonicalize(value) ?? '';
  const bytes = Buffer.byteLength(canonical, 'utf8');
  if (bytes > LIMITS.metadataBytesMax) {
    throw invalid(
      'INVALID_METADATA',
      `metadata is ${bytes} bytes in canonical JSON; at most ${LIMITS.metadataBytesMax}`,
    );
  }
  return value as Record<string, unknown>;
}

/** A string field under a length limit, with the field's own error code. */
function checkText(
  value: unknown,
  field: string,
  maxChars: number,
  code: LedgerErrorCode,
  options: { required?: boolean; allowNull?: boolean } = {},
): string | null | undefined {
  if (value === undefined) {
    if (options.required) throw invalid(code, `${field} is required`);
    return undefined;
  }
  if (value === null && options.allowNull) return null;
  if (typeof value !== 'string') throw invalid(code, `${field} must be a string`);
  if ([...value].length > maxChars)
    throw invalid(code, `${field} is longer than ${maxChars} chars`);
  return value;
}

function parseEntries(value: unknown): EntryInput[] {
  if (!Array.isArray(value))
    throw invalid('INVALID_REQUEST', 'entries must be an array', [
      {
        field: 'entries',
        location: 'body',
        message: 'entries must be an array',
        type: 'array.base',
      },
    ]);
  if (value.length < LIMITS.entriesMin || value.length > LIMITS.entriesMax) {
    throw invalid(
      'ENTRY_COUNT_OUT_OF_RANGE',
      `a transaction has ${LIMITS.entriesMin} to ${LIMITS.entriesMax} entries; got ${value.length}`,
    );
  }
  return value.map((raw: unknown, i) => {
    const e = raw as Record<string, unknown>;
    if (!e || typeof e !== 'object' || Array.isArray(e))
      throw invalid('INVALID_REQUEST', `entries[${i}] must be an object`);
    const unknownKeys = Object.keys(e).filter(
      (k) => !['account_id', 'direction', 'amount'].includes(k),
    );
    if (unknownKeys.length > 0)
      throw invalid(
        'INVALID_REQUEST',
        `entries[${i}] has unknown fields: ${unknownKeys.join(', ')}`,
      );
    if (!isUuid(e.account_id))
      throw invalid('INVALID_ACCOUNT_ID', `entries[${i}].account_id must be a UUID`);
    if (e.direction !== 'debit' && e.direction !== 'credit')
      throw invalid('INVALID_REQUEST', `entries[${i}].direction must be debit or credit`);
    if (typeof e.amount !== 'string')
      throw invalid('INVALID_AMOUNT', `entries[${i}].amount must be a decimal string`);
    return { account_id: e.account_id.toLowerCase(), direction: e.direction, amount: e.amount };
  });
}

export interface ParsedTransaction {
  description: string | null;
  pending: boolean;
  expiresAtMs: number | null;
  effectiveAtMs: number | null;
  externalId: string | null;
  metadata: Record<string, unknown>;
  entries: EntryInput[];
}

/** A posting body as TRANSACTION_CREATE (routes/transactions.ts) validated it: instants in ms. */
export interface ValidatedTransaction {
  description?: string | null;
  pending?: boolean;
  expires_at?: number;
  effective_at?: number;
  external_id?: string | null;
  metadata?: Record<string, unknown>;
  entries: EntryInput[];
}

export const parsedTransactionOf = (body: ValidatedTransaction): ParsedTransaction => ({
  description: body.description ?? null,
  pending: body.pending === true,
  expiresAtMs: body.expires_at ?? null,
  effectiveAtMs: body.effective_at ?? null,
  externalId: body.external_id ?? null,
  metadata: body.metadata ?? {},
  entries: body.entries,
});

/**
 * The posting body as the one-statement path reads it (posting-statement.ts), by hand: that path
 * takes every posting of a remembered key, and a joi walk of each body would cost it more than the
 * rest of its work in Node. It accepts exactly what TRANSACTION_CREATE accepts, with the same value,
 * and refuses in the same order with the same codes and messages (the general path, which
 * validates with joi, answers every body this refuses: the two are held equal by
 * test/unit/ledger/posting-body.test.ts).
 */
export function parseTransaction(input: TransactionInput, nowMs: number): ParsedTransaction {
  const known = [
    'description',
    'pending',
    'expires_at',
    'effective_at',
    'external_id',
    'metadata',
    'entries',
  ];
  const unknownKeys = Object.keys(input).filter((k) => !known.includes(k));
  if (unknownKeys.length > 0)
    throw invalid(
      'INVALID_REQUEST',
      `unknown fields: ${unknownKeys.join(', ')}`,
      unknownKeys.map((k) => ({
        field: k,
        location: 'body',
        message: `"${k}" is not allowed`,
        type: 'object.unknown',
      })),
    );
  if (input.pending !== undefined && typeof input.pending !== 'boolean')
    throw invalid('INVALID_REQUEST', 'pending must be a boolean');
  const pending = input.pending === true;
  let expiresAtMs: number | null = null;
  if (pending || input.expires_at !== undefined) {
    if (!pending)
      throw invalid('INVALID_EXPIRES_AT', 'expires_at is only for pending transactions');
    expiresAtMs = parseInstantWithOffset(input.expires_at);
    if (expiresAtMs === null)
      throw invalid(
        'INVALID_EXPIRES_AT',
        'expires_at must be an ISO-8601 instant with an explicit UTC offset or Z',
      );
    if (expiresAtMs <= nowMs)
      throw invalid('INVALID_EXPIRES_AT', 'expires_at must be in the future');
    if (expiresAtMs - nowMs > HOLD_DURATION_MAX_MS)
      throw invalid('INVALID_EXPIRES_AT', 'expires_at is more than 366 days away');
  }
  let effectiveAtMs: number | null = null;
  if (input.effective_at !== undefined) {
    effectiveAtMs = parseInstantWithOffset(input.effective_at);
    if (effectiveAtMs === null)
      throw invalid(
        'INVALID_EFFECTIVE_AT',
        'effective_at must be an ISO-8601 instant with an explicit UTC offset or Z',
      );
  }
  return {
    description:
      checkText(
        input.description,
        'description',
        LIMITS.descriptionCharsMax,
        'INVALID_DESCRIPTION',
        { allowNull: true },
      ) ?? null,
    pending,
    expiresAtMs,
    effectiveAtMs,
    externalId:
      checkText(
        input.external_id,
        'external_id',
        LIMITS.externalIdCharsMax,
        'INVALID_EXTERNAL_ID',
        { allowNull: true },
      ) ?? null,
    metadata: checkMetadata(input.metadata),
    entries: parseEntries(input.entries),
  };
}

export interface CreatedTransaction extends PostedBody {
  /** For the hold dispatcher: set when the transaction is pending. */
  hold?: { expiresAtMs: number };
}

/** Where the posting's response is recorded, in the posting's own statement. */
export interface PostingRecord {
  endpoint: string;
  key: string;
  status: number;
}

/** A refusal the posting functions returned (their codes are the catalogue's). */
function refusal(r: PostingRefusal): DomainError {
  const details = r.details as { status?: string } | undefined;
  return ledgerError(isCatalogueCode(LEDGER_ERRORS, r.code) ? r.code : 'INTERNAL_ERROR', {
    message: r.message,
    details: r.details,
    retryAfterSeconds:
      r.code === 'ACCOUNT_NOT_ACTIVE' && details?.status === 'frozen'
        ? FROZEN_RETRY_AFTER_SECONDS
        : undefined,
  });
}

/** Postings of one tenant per database call (group commit): at most this many at once. */
export const POSTING_BATCH_SIZE_MAX = 64;
/** Posting calls of one tenant in flight at once per process (postings arriving meanwhile queue). */
export const POSTING_BATCH_FLIGHTS_MAX = 1;

/** Postings of the general path, batched per tenant (createPostingBatcher). */
export type PostingBatcher = NaturalBatcher<PostingCall, PostingResult>;

/**
 * A posting batcher of the pool: concurrent postings of one tenant go to Postgres together
 * (ledger.post_transactions, migrations 0009 and 0012), one transaction and one commit per batch; a lone
 * posting, and every posting of a batch that failed as a whole, goes alone
 * (ledger.post_transaction), so an unexpected error stays with its own posting. Each ledger app
 * makes its own with its pool (services/ledger/batchers.ts), so batches never mix two pools.
 */
export function createPostingBatcher(pool: DatabasePool): PostingBatcher {
  return new NaturalBatcher({
    sizeMax: POSTING_BATCH_SIZE_MAX,
    flightsMax: POSTING_BATCH_FLIGHTS_MAX,
    runBatch: (tenantId, calls) => postTransactions(pool, tenantId, `${LOCK_TIMEOUT_MS}ms`, calls),
    runOne: (_tenantId, call) => postTransaction(pool, call),
    onFlight: observePostingFlight('general'),
  });
}

/** What one parsed request posts: fresh ids for the transaction and its entries. */
function postingCallOf(
  tenantId: string,
  parsed: ParsedTransaction,
  record?: PostingRecord,
): PostingCall {
  return {
    tenantId,
    lockTimeout: `${LOCK_TIMEOUT_MS}ms`,
    transactionId: uuidv7(),
    pending: parsed.pending,
    description: parsed.description,
    externalId: parsed.externalId,
    metadata: parsed.metadata,
    effectiveAt:
      parsed.effectiveAtMs === null ? null : new Date(parsed.effectiveAtMs).toISOString(),
    expiresAt: parsed.expiresAtMs === null ? null : new Date(parsed.expiresAtMs).toISOString(),
    entries: parsed.entries.map((e) => ({
      entryId: uuidv7(),
      accountId: e.account_id,
      direction: e.direction,
      amount: e.amount,
    })),
    idempotency: record,
  };
}

const isDuplicateExternalId = (error: unknown) =>
  error instanceof UniqueIntegrityConstraintViolationError &&
  error.constraint === 'transactions_external_id';

function createdOf(body: PostedBody, parsed: ParsedTransaction): CreatedTransaction {
  const created: CreatedTransaction = { ...body };
  if (parsed.pending) created.hold = { expiresAtMs: parsed.expiresAtMs! };
  return created;
}

/**
 * Posts a transaction in one round trip: ledger.post_transaction (migration 0004) sets the
 * tenant context, locks the sync accounts in account_id order, applies rules 1-4 (the rules of
 * posting.ts, in SQL so that they run under the locks without a round trip back to Node), and
 * writes the transaction, legs, committed legs, counters, hold outbox row and idempotency record
 * in its own implicit transaction; the deferred balance check runs at its commit. Concurrent
 * postings of the tenant share that transaction (`postings`, the app's batcher), each with the
 * same result.
 */
export async function createTransaction(
  postings: PostingBatcher,
  tenantId: string,
  input: TransactionInput,
  record?: PostingRecord,
): Promise<CreatedTransaction> {
  return createParsedTransaction(postings, tenantId, parseTransaction(input, Date.now()), record);
}

/** createTransaction of a body already validated (the posting route's general path). */
export async function createParsedTransaction(
  postings: PostingBatcher,
  tenantId: string,
  parsed: ParsedTransaction,
  record?: PostingRecord,
): Promise<CreatedTransaction> {
  if (!tenantId) {
    throw ledgerError('TENANT_CONTEXT_REQUIRED', { message: 'tenant context missing' });
  }
  let outcome: PostingResult;
  try {
    outcome = await postings.submit(tenantId, postingCallOf(tenantId, parsed, record));
  } catch (error) {
    if (isDuplicateExternalId(error)) {
      throw ledgerError('DUPLICATE_TRANSACTION', {
        message: `a transaction with external_id ${String(parsed.externalId)} exists`,
        details: { external_id: parsed.externalId },
        cause: error,
      });
    }
    throw mapDatabaseError(error);
  }
  if ('error' in outcome) throw refusal(outcome.error);
  return createdOf(outcome.body, parsed);
}

/** The posting route: its role, and its endpoint as Idempotency-Keys are scoped. */
export const POSTING_ROUTE = {
  role: 'ledger_poster',
  method: 'POST',
  path: '/v1/transactions',
} as const;
export const POSTING_ENDPOINT = `${POSTING_ROUTE.method} ${POSTING_ROUTE.path}`;

/** The key that sent a posting and the Idempotency-Key it claims (createAuthorizedTransaction). */
export interface PostingAuthority {
  keyId: string;
  secretSha256: Buffer;
  idempotencyKey: string;
  requestSha256: Buffer;
}

/**
 * What createAuthorizedTransaction did: posted; refused (the Idempotency-Key stays claimed, for
 * the caller to settle); or nothing at all, for the general path to answer (the key no longer
 * passes, the Idempotency-Key is taken, or the external_id exists).
 */
export type AuthorizedOutcome =
  | { created: CreatedTransaction }
  | { refused: DomainError }
  | { fallback: 'credential' | 'key' | 'duplicate' };

/** Postings of the one-statement path, batched per tenant (createAuthorizedPostingBatcher). */
export type AuthorizedPostingBatcher = NaturalBatcher<
  AuthorizedPostingCall,
  AuthorizedPostingResult
>;

/**
 * An authorized posting batcher of the pool: as createPostingBatcher, each batch in one
 * ledger.post_transactions_authorized statement. One per ledger app, as the other.
 */
export function createAuthorizedPostingBatcher(pool: DatabasePool): AuthorizedPostingBatcher {
  const post = (tenantId: string, calls: AuthorizedPostingCall[]) =>
    postTransactionsAuthorized(
      pool,
      tenantId,
      {
        lockTimeout: `${LOCK_TIMEOUT_MS}ms`,
        role: POSTING_ROUTE.role,
        endpoint: POSTING_ENDPOINT,
        lockMs: IDEMPOTENCY_LOCK_MS,
        status: 201,
      },
      calls,
    );
  return new NaturalBatcher({
    sizeMax: POSTING_BATCH_SIZE_MAX,
    flightsMax: POSTING_BATCH_FLIGHTS_MAX,
    runBatch: post,
    runOne: async (tenantId, call) => (await post(tenantId, [call]))[0]!,
    onFlight: observePostingFlight('one_statement'),
  });
}

/**
 * A parsed posting with the check of the key that sent it and the claim of its Idempotency-Key,
 * in one statement and one commit (ledger.post_transactions_authorized, migration 0013); for a
 * key authenticated before (RememberedKeys). Throws only when nothing was claimed.
 */
export async function createAuthorizedTransaction(
  postings: AuthorizedPostingBatcher,
  tenantId: string,
  parsed: ParsedTransaction,
  authority: PostingAuthority,
): Promise<AuthorizedOutcome> {
  let outcome: AuthorizedPostingResult;
  try {
    outcome = await postings.submit(tenantId, {
      ...postingCallOf(tenantId, parsed),
      keyId: authority.keyId,
      secretSha256: authority.secretSha256,
      idempotencyKey: authority.idempotencyKey,
      requestSha256: authority.requestSha256,
    });
  } catch (error) {
    if (isDuplicateExternalId(error)) return { fallback: 'duplicate' };
    throw mapDatabaseError(error);
  }
  if ('fallback' in outcome) return outcome;
  if ('error' in outcome) return { refused: refusal(outcome.error) };
  return { created: createdOf(outcome.body, parsed) };
}

const negate = (c: Counters): Counters => ({
  postedDebits: -c.postedDebits,
  postedCredits: -c.postedCredits,
  pendingDebits: -c.pendingDebits,
  pendingCredits: -c.pendingCredits,
});

/** The counter movement that settles a hold: pending released, and (for commit) posted added. */
function settlementDeltas(entries: readonly EntryRow[], syncIds: Set<string>, commit: boolean) {
  const legs: Leg[] = entries.map((e) => ({
    accountId: e.account_id,
    assetTypeId: e.asset_type_id,
    direction: e.direction,
    amountMinor: BigInt(e.amount_minor),
  }));
  const released = deltasOf(legs, true);
  const posted = deltasOf(legs, false);
  return [...released.keys()]
    .filter((id) => syncIds.has(id))
    .sort()
    .map((accountId) => {
      const r = negate(released.get(accountId)!);
      const p = commit
        ? posted.get(accountId)!
        : { postedDebits: 0n, postedCredits: 0n, pendingDebits: 0n, pendingCredits: 0n };
      return {
        accountId,
        postedDebits: p.postedDebits,
        postedCredits: p.postedCredits,
        pendingDebits: r.pendingDebits,
        pendingCredits: r.pendingCredits,
      };
    });
}

export type Settlement = 'commit' | 'void' | 'expire';

export interface SettledTransaction {
  transaction_id: string;
  state: TransactionState;
  finalized_at: string;
}

/**
 * What settling a transaction came to. A domain outcome, not a refusal: the route turns it into
 * its answer (settleTransaction), the hold-expiry activity into its result.
 */
export type SettlementOutcome =
  /** Moved to its final state; `expired` also for a commit that came after expires_at. */
  | { kind: 'settled'; settled: SettledTransaction }
  /** Final before this call (TransactionFinal): nothing written. */
  | { kind: 'already_final'; state: Exclude<TransactionState, 'pending'> }
  /** An expiry before the database's clock reaches expires_at: nothing written. */
  | { kind: 'not_due' };

/**
 * Moves a pending transaction to its final state. Commit does not commit a hold whose
 * expires_at has passed, even if the expiry has not run yet: the hold is expired in the same
 * database transaction. Throws TRANSACTION_NOT_FOUND, ACCOUNT_NOT_ACTIVE (commit) and the
 * database's refusals.
 */
export async function settlePendingTransaction(
  pool: DatabasePool,
  tenantId: string,
  transactionId: string,
  action: Settlement,
): Promise<SettlementOutcome> {
  if (!isUuid(transactionId)) throw notFound();
  return withTenant(pool, tenantId, async (tx): Promise<SettlementOutcome> => {
    const transaction = await findTransaction(tx, transactionId, true);
    if (!transaction) throw notFound();
    if (transaction.state !== 'pending') return { kind: 'already_final', state: transaction.state };
    if (action === 'expire' && !transaction.past_expiry) return { kind: 'not_due' };
    const entries = await findEntries(tx, transactionId);
    const accountIds = [...new Set(entries.map((e) => e.account_id))];
    const accounts = await readPostingAccounts(tx, accountIds);
    const syncIds = accounts
      .filter((a) => a.balance_tracking === 'sync')
      .map((a) => a.account_id)
      .sort();
    const locked = await lockSyncBalances(tx, syncIds);
    const expired = action === 'expire' || (action === 'commit' && transaction.past_expiry);
    if (action === 'commit' && !expired) {
      for (const account of accounts) {
        const status =
          locked.find((l) => l.account_id === account.account_id)?.status ?? account.status;
        if (status !== 'active') throw accountNotActive(account.account_id, status);
      }
    }
    const state: Exclude<TransactionState, 'pending'> = expired
      ? 'expired'
      : action === 'commit'
        ? 'committed'
        : 'voided';
    const finalizedAt = await finalizeTransaction(tx, transactionId, state);
    if (finalizedAt === null)
      throw new Error(`transaction ${transactionId} left pending under its own lock`);
    await applyBalanceDeltas(
      tx,
      settlementDeltas(entries, new Set(syncIds), state === 'committed'),
    );
    if (state === 'committed') await insertCommittedLegs(tx, transactionId);
    return {
      kind: 'settled',
      settled: { transaction_id: transactionId, state, finalized_at: finalizedAt },
    };
  });
}

/**
 * Commit or void, as the API answers it: a hold past its expires_at is expired (committed so)
 * and refused HOLD_EXPIRED; a transaction already final is refused INVALID_TRANSACTION_STATE
 * with its state, except a commit of an expired hold, which is HOLD_EXPIRED again.
 */
export async function settleTransaction(
  pool: DatabasePool,
  tenantId: string,
  transactionId: string,
  action: Exclude<Settlement, 'expire'>,
): Promise<SettledTransaction> {
  const outcome = await settlePendingTransaction(pool, tenantId, transactionId, action);
  switch (outcome.kind) {
    case 'settled':
      if (action === 'commit' && outcome.settled.state === 'expired') throw holdExpired();
      return outcome.settled;
    case 'already_final':
      if (action === 'commit' && outcome.state === 'expired') throw holdExpired();
      throw ledgerError('INVALID_TRANSACTION_STATE', {
        message: `transaction is ${outcome.state}`,
        details: { state: outcome.state },
      });
    case 'not_due':
      throw new Error('only an expiry can be not due');
  }
}

const holdExpired = () =>
  ledgerError('HOLD_EXPIRED', { message: 'the hold expired before settlement' });

export async function getTransaction(pool: DatabasePool, tenantId: string, transactionId: string) {
  if (!isUuid(transactionId)) throw notFound();
  return withTenant(pool, tenantId, async (tx) => {
    const transaction = await findTransaction(tx, transactionId);
    if (!transaction) throw notFound();
    return presentTransaction(transaction, await findEntries(tx, transactionId));
  });
}

export function presentTransaction(t: TransactionRow, entries: readonly EntryRow[]) {
  return {
    transaction_id: t.transaction_id,
    state: t.state,
    pending: t.pending,
    description: t.description,
    external_id: t.external_id,
    metadata: t.metadata,
    effective_at: t.effective_at,
    expires_at: t.expires_at,
    created_at: t.created_at,
    finalized_at: t.finalized_at,
    entries: entries.map((e) => ({
      id: e.id,
      account_id: e.account_id,
      direction: e.direction,
      amount: minorToDecimal(e.amount_minor, e.scale),
      amount_minor: e.amount_minor,
      scale: e.scale,
      line_no: e.line_no,
    })),
  };
}
