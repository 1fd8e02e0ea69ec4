import { InvalidInputError, StatementTimeoutError } from 'slonik';
import { isLoginRefused, sql, sqlDetail, sqlState, type DatabasePool, type Tx } from '../pool';
import { DomainError, type DomainErrorInit } from '../../platform/errors';

/**
 * The ledger's codes for the database's own refusals: domain outcomes, no HTTP here (the ledger's
 * catalogue, services/ledger/errors.ts, holds that each is one of its codes).
 */
export type DatabaseRefusalCode =
  | 'POSTING_FROZEN'
  | 'STATEMENT_TIMEOUT'
  | 'CONFLICT_RETRY'
  | 'LOCK_TIMEOUT'
  | 'APPEND_ONLY_VIOLATION'
  | 'UNBALANCED_TRANSACTION'
  | 'INVALID_TENANT'
  | 'IMMUTABLE_VIOLATION'
  | 'TENANT_CONTEXT_MISMATCH'
  | 'AUTHZ_CREDENTIAL_REJECTED'
  | 'CONSTRAINT_VIOLATION'
  | 'REFERENCE_NOT_FOUND'
  | 'INVALID_INPUT'
  | 'TENANT_CONTEXT_REQUIRED';

const refused = (code: DatabaseRefusalCode, init: DomainErrorInit = {}) =>
  new DomainError(code, init);

export type { Tx };

/** The refusal of a sub-tenant's sub-tenant: by the API first, by the depth trigger behind it. */
export const SUB_TENANT_DEPTH_MESSAGE =
  'a sub-tenant cannot have sub-tenants (depth is capped at one)';

/** SQLSTATEs raised by the ledger's own triggers (db/migrations/ledger). */
export const SQLSTATE = {
  appendOnly: 'LA001',
  unbalanced: 'LB001',
  depth: 'LD001',
  immutable: 'LI001',
  postingFrozen: 'LF001',
  rlsViolation: '42501',
  lockNotAvailable: '55P03',
  serializationFailure: '40001',
  deadlock: '40P01',
} as const;

/** POSTING_FROZEN from migration 0015's trigger: retryable after the operator's delay. */
function postingFrozen(error: unknown): DomainError {
  const detail = JSON.parse(sqlDetail(error) ?? '{}') as {
    retry_after_seconds?: number;
    asset_type_id?: string | null;
  };
  const assetTypeId = detail.asset_type_id ?? null;
  return refused('POSTING_FROZEN', {
    message:
      assetTypeId === null
        ? 'posting is frozen for this tenant by its operator; retry later with the same Idempotency-Key'
        : `posting is frozen for asset type ${assetTypeId} by its operator; retry later with the same Idempotency-Key`,
    details:
      assetTypeId === null
        ? { scope: 'tenant' }
        : { scope: 'asset_type', asset_type_id: assetTypeId },
    retryAfterSeconds: detail.retry_after_seconds ?? 60,
    cause: error,
  });
}

type Refusal = { code: DatabaseRefusalCode; message: string; retryAfterSeconds?: number };

const BUSY = { retryAfterSeconds: 1 } as const;
const STATEMENT_TIMEOUT: Refusal = {
  code: 'STATEMENT_TIMEOUT',
  message: 'database statement budget exceeded',
  ...BUSY,
};
const CONFLICT: Refusal = { code: 'CONFLICT_RETRY', message: 'concurrent update; retry', ...BUSY };
const CONSTRAINT: Refusal = {
  code: 'CONSTRAINT_VIOLATION',
  message: 'a database constraint refused the value',
};

/** The refusal each SQLSTATE means (POSTING_FROZEN, whose answer reads the detail, apart). */
const REFUSALS: Record<string, Refusal> = {
  [SQLSTATE.appendOnly]: { code: 'APPEND_ONLY_VIOLATION', message: 'the journal is append-only' },
  [SQLSTATE.unbalanced]: {
    code: 'UNBALANCED_TRANSACTION',
    message: 'debits must equal credits per asset type',
  },
  [SQLSTATE.depth]: { code: 'INVALID_TENANT', message: SUB_TENANT_DEPTH_MESSAGE },
  [SQLSTATE.immutable]: {
    code: 'IMMUTABLE_VIOLATION',
    message: 'an immutable field was targeted',
  },
  [SQLSTATE.rlsViolation]: {
    code: 'TENANT_CONTEXT_MISMATCH',
    message: 'row outside the tenant context',
  },
  [SQLSTATE.lockNotAvailable]: { code: 'LOCK_TIMEOUT', message: 'account is busy; retry', ...BUSY },
  [SQLSTATE.serializationFailure]: CONFLICT,
  [SQLSTATE.deadlock]: CONFLICT,
  '57014': STATEMENT_TIMEOUT,
  '23514': CONSTRAINT,
  '23502': CONSTRAINT,
  '23503': { code: 'REFERENCE_NOT_FOUND', message: 'a referenced record does not exist' },
};

/** Maps the database's own refusals to the ledger's error codes; anything else passes through. */
export function mapDatabaseError(error: unknown): unknown {
  if (error instanceof DomainError) return error;
  const refusal = refusalOf(error);
  if (!refusal) return error;
  if (refusal === 'posting frozen') return postingFrozen(error);
  const { code, ...init } = refusal;
  return refused(code, { ...init, cause: error });
}

function refusalOf(error: unknown): Refusal | 'posting frozen' | null {
  if (error instanceof StatementTimeoutError) return STATEMENT_TIMEOUT;
  // The database refused the service's own login: its credential, not the caller's.
  if (isLoginRefused(error))
    return {
      code: 'AUTHZ_CREDENTIAL_REJECTED',
      message: "the ledger's database refuses the service's credential; retry",
      ...BUSY,
    };
  const state = sqlState(error);
  if (state === SQLSTATE.postingFrozen) return 'posting frozen';
  if (state !== undefined && Object.hasOwn(REFUSALS, state)) return REFUSALS[state]!;
  if (isMalformedValue(error)) return { code: 'INVALID_INPUT', message: 'a value is malformed' };
  return null;
}

/**
 * SQLSTATEs of a value the database could not read (a bad timestamp, a character text cannot
 * hold): input that slipped past the API's validation. Other data exceptions (a numeric overflow,
 * a division by zero) come from the ledger's own arithmetic and pass through as failures.
 */
const MALFORMED_VALUE_STATES = new Set(['22007', '22008', '22021', '22P05']);

function isMalformedValue(error: unknown): boolean {
  // slonik rethrows 22P02 (invalid text representation: a malformed uuid, number or boolean) as
  // its InvalidInputError with the server's message and without the SQLSTATE; it uses the same
  // class for its own misuse errors, so only the server's messages count.
  if (error instanceof InvalidInputError)
    return /^invalid input (syntax|value)/.test(error.message);
  const state = sqlState(error);
  return state !== undefined && MALFORMED_VALUE_STATES.has(state);
}

async function run<T>(
  pool: DatabasePool,
  setting: ReturnType<typeof sql.fragment>,
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  try {
    return await pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`SELECT ${setting}`);
      return fn(tx);
    });
  } catch (error) {
    throw mapDatabaseError(error);
  }
}

/**
 * How long a tenant transaction waits for a row lock (a hot account) before LOCK_TIMEOUT (retry
 * in a second), instead of sitting on a pool connection until the statement budget ends.
 */
export const LOCK_TIMEOUT_MS = 2_000;

/** One database transaction in a tenant's row-level-security context. */
export function withTenant<T>(
  pool: DatabasePool,
  tenantId: string,
  fn: (tx: Tx) => Promise<T>,
): Promise<T> {
  if (!tenantId) {
    throw refused('TENANT_CONTEXT_REQUIRED', { message: 'tenant context missing' });
  }
  return run(
    pool,
    sql.fragment`set_config('ledger.tenant_id', ${tenantId}, true), set_config('lock_timeout', ${`${LOCK_TIMEOUT_MS}ms`}, true)`,
    fn,
  );
}

/** Operator CLI, hold dispatcher and sweeper, async rollup: every tenant's rows. */
export function withSystem<T>(pool: DatabasePool, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return run(pool, sql.fragment`set_config('ledger.system', 'on', true)`, fn);
}
