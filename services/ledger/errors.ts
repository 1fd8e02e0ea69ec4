import {
  errorFactory,
  PLATFORM_ERRORS,
  type ErrorCatalogue,
  type ErrorDefinition,
} from '../../platform/errors';
import type { DatabaseRefusalCode } from '../../db/ledger/context';

const final = (status: number, message: string): ErrorDefinition => ({
  status,
  message,
  retryable: false,
});
const transient = (status: number, message: string): ErrorDefinition => ({
  status,
  message,
  retryable: true,
});

/**
 * Every code the ledger answers (the spec's and ours), with its status: the one place a code
 * meets HTTP. The OpenAPI document lists these codes (a test holds the two equal). `retryable`:
 * the same request may succeed later; that is every 5xx and 429, and a 409 whose throwers always
 * say when (Retry-After). A refusal given a Retry-After by its thrower is retryable too (a frozen
 * account's ACCOUNT_NOT_ACTIVE). Anything else is final: its Idempotency-Key keeps the answer
 * (idempotency.ts), and an activity ends with it as a non-retryable failure.
 */
export const LEDGER_ERRORS = {
  ...PLATFORM_ERRORS,
  // A body the ledger cannot read is the client's error, as the spec's INVALID_REQUEST.
  MALFORMED_JSON: final(422, 'malformed JSON body'),
  UNSUPPORTED_MEDIA_TYPE: final(422, 'request body must be application/json'),
  MISSING_IDEMPOTENCY_KEY: final(400, 'mutating requests need an Idempotency-Key header'),
  UNAUTHENTICATED: final(401, 'missing or invalid credential'),
  CREDENTIAL_EXPIRED: final(401, 'credential expired'),
  // A role the key lacks, and the platform's PRIVATE_NETWORK_ONLY refusal of /metrics.
  FORBIDDEN: final(403, 'forbidden'),
  TENANT_SUSPENDED: final(403, 'tenant suspended'),
  TENANT_NOT_PROVISIONED: final(403, 'tenant not provisioned'),
  TENANT_CONTEXT_MISMATCH: final(403, 'row outside the tenant context'),
  ACCOUNT_NOT_FOUND: final(404, 'account not found'),
  TRANSACTION_NOT_FOUND: final(404, 'transaction not found'),
  ASSET_TYPE_NOT_FOUND: final(404, 'asset type not found'),
  SUB_TENANT_NOT_FOUND: final(404, 'sub-tenant not found'),
  KEY_NOT_FOUND: final(404, 'key not found'),
  ACCOUNT_NOT_ACTIVE: final(409, 'account not active'),
  INVALID_TRANSACTION_STATE: final(409, 'transaction not pending'),
  DUPLICATE_TRANSACTION: final(409, 'external_id already used'),
  LOCK_TIMEOUT: transient(409, 'a record is busy; retry'),
  CONFLICT_RETRY: transient(409, 'concurrent update; retry'),
  CLOSE_REQUIRES_ZERO_BALANCE: final(409, 'closing needs a zero balance and no holds'),
  ASSET_TYPE_SUPERSEDED: final(409, 'asset type superseded'),
  IDEMPOTENCY_IN_FLIGHT: transient(409, 'a request with this Idempotency-Key is in flight'),
  POSTING_FROZEN: transient(409, 'posting is frozen by the operator'),
  APPEND_ONLY_VIOLATION: final(409, 'the journal is append-only'),
  IMMUTABLE_VIOLATION: final(409, 'an immutable field cannot change'),
  TENANT_CONTEXT_REQUIRED: final(409, 'tenant context missing'),
  HOLD_EXPIRED: final(410, 'hold expired'),
  UNBALANCED_TRANSACTION: final(422, 'debits and credits differ'),
  INSUFFICIENT_AVAILABLE: final(422, 'insufficient available balance'),
  INVALID_AMOUNT: final(422, 'invalid amount'),
  INVALID_AMOUNT_SCALE: final(422, 'amount beyond the asset scale'),
  INVALID_FLOOR: final(422, 'invalid floor'),
  INVALID_EXPIRES_AT: final(422, 'invalid expires_at'),
  INVALID_EFFECTIVE_AT: final(422, 'invalid effective_at'),
  INVALID_AS_OF: final(422, 'invalid as_of'),
  INVALID_STATE: final(422, 'invalid state'),
  IDEMPOTENCY_KEY_MISMATCH: final(422, 'Idempotency-Key reused with another request'),
  ENTRY_COUNT_OUT_OF_RANGE: final(422, 'entry count out of range'),
  INVALID_ASSET_TYPE: final(422, 'invalid asset type'),
  IMMUTABLE_FIELD: final(422, 'immutable field'),
  INVALID_TENANT: final(422, 'invalid tenant'),
  INVALID_KEY: final(422, 'invalid key'),
  REFERENCE_NOT_FOUND: final(422, 'a referenced record does not exist'),
  CONSTRAINT_VIOLATION: final(422, 'a database constraint refused the value'),
  INVALID_INPUT: final(422, 'a value is malformed'),
  INVALID_ACCOUNT_ID: final(422, 'invalid account id'),
  INVALID_METADATA: final(422, 'invalid metadata'),
  INVALID_ACCOUNT: final(422, 'invalid account'),
  INVALID_DESCRIPTION: final(422, 'invalid description'),
  INVALID_EXTERNAL_ID: final(422, 'invalid external_id'),
  RATE_LIMITED: transient(429, 'rate limited'),
  QUOTA_EXCEEDED: transient(429, 'monthly call quota exceeded'),
  REVOCATION_FAILED: transient(502, 'revocation failed'),
  AUTHZ_UNAVAILABLE: transient(503, 'authorization unavailable'),
  AUTHZ_CREDENTIAL_REJECTED: transient(503, "the database refused the service's credential"),
  STATEMENT_TIMEOUT: transient(503, 'database statement budget exceeded'),
} as const satisfies ErrorCatalogue;

export type LedgerErrorCode = keyof typeof LEDGER_ERRORS;
export const ledgerError = errorFactory<LedgerErrorCode>(LEDGER_ERRORS);

/** The database's refusals (db/ledger/context.ts) are ledger codes: this fails to compile if not. */
export const DATABASE_REFUSALS_ARE_LEDGER_CODES: readonly LedgerErrorCode[] =
  [] as DatabaseRefusalCode[];
