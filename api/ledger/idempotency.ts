import canonicalize from 'canonicalize';
import { LEDGER_ERRORS, ledgerError } from '../../services/ledger/errors';
import type { Context, Next } from 'koa';
import type { DatabasePool } from '../../db/pool';
import { withTenant, type Tx } from '../../db/ledger/context';
import {
  IDEMPOTENCY_LOCK_MS,
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
  type ClaimResult,
  type IdempotencyScope,
} from '../../db/ledger/idempotency';
import {
  isDomainError,
  isRetryable,
  RequestValidationError,
  type DomainError,
} from '../../platform/errors';
import { MISSING_BODY } from '../http/validate';
import { sha256, type Principal } from '../../services/ledger/credentials';
import { ledgerEnvelope } from './envelope';
import { LIMITS } from '../../services/ledger/validation';

export const IDEMPOTENCY_RETRY_AFTER_SECONDS = 1;

export interface IdempotencyState {
  scope: IdempotencyScope;
  /** Says the handler recorded the response itself, inside its own database transaction. */
  markCompleted(): void;
  /** Records the response inside the caller's own database transaction (atomic with the write). */
  complete(tx: Tx, status: number, body: unknown): Promise<void>;
}

/**
 * A refusal is remembered (a replay gets it again) unless the catalogue calls it retryable (5xx,
 * 429, and any refusal with a Retry-After: services/ledger/errors.ts), or the request came without a
 * body: that send went wrong, and the same key must still work once it has one.
 */
function isFinal(error: DomainError): boolean {
  if (error instanceof RequestValidationError && error.issues.includes(MISSING_BODY)) return false;
  return !isRetryable(error, LEDGER_ERRORS);
}

function keyHeaderError(key: string): DomainError | null {
  if (key === '')
    return ledgerError('MISSING_IDEMPOTENCY_KEY', {
      message: 'mutating requests need an Idempotency-Key header',
    });
  if (key.length > LIMITS.idempotencyKeyCharsMax) {
    return ledgerError('INVALID_REQUEST', {
      message: `Idempotency-Key is 1 to ${LIMITS.idempotencyKeyCharsMax} chars`,
      details: [
        {
          field: 'Idempotency-Key',
          location: 'headers',
          message: `at most ${LIMITS.idempotencyKeyCharsMax} chars`,
          type: 'string.max',
        },
      ],
    });
  }
  return null;
}

/** The request's Idempotency-Key when it is usable (1 to 255 chars), else null; never throws. */
export const usableKeyOf = (ctx: Context): string | null => {
  const key = ctx.get('Idempotency-Key');
  return keyHeaderError(key) ? null : key;
};

/** The hash an idempotency record keeps: the concrete path and the canonical JSON body. */
export const requestHashOf = (ctx: Context): Buffer =>
  sha256(
    `${ctx.path}\n${ctx.request.body === undefined ? '' : (canonicalize(ctx.request.body) ?? '')}`,
  );

/**
 * After the request that claimed the key failed: a final refusal becomes the key's response (a
 * replay gets it again); a transient failure frees the key, so a retry with it runs again.
 */
export async function settleFailedClaim(
  pool: DatabasePool,
  scope: IdempotencyScope,
  error: unknown,
): Promise<void> {
  if (isDomainError(error) && isFinal(error)) {
    const rendered = ledgerEnvelope(error);
    await withTenant(pool, scope.tenantId, (tx) =>
      completeIdempotencyKey(tx, scope, rendered.status, rendered.body),
    );
  } else {
    await releaseIdempotencyKey(pool, scope).catch(() => undefined);
  }
}

/**
 * Required `Idempotency-Key` on a mutating route, scoped per tenant and endpoint (method +
 * route template). The request hash covers the concrete path and the canonical JSON body.
 * `claimed` is the claim already made for this request in the authentication round trip
 * (authenticateAndClaim), or null to claim here.
 */
export async function runIdempotent(
  pool: DatabasePool,
  ctx: Context,
  next: Next,
  endpoint: string,
  requestSha256: Buffer,
  claimed: ClaimResult | null,
): Promise<void> {
  const principal = ctx.state.principal as Principal;
  const key = ctx.get('Idempotency-Key');
  const headerError = keyHeaderError(key);
  if (headerError) throw headerError;
  const scope: IdempotencyScope = { tenantId: principal.tenantId, endpoint, key };
  const claim =
    claimed ?? (await claimIdempotencyKey(pool, scope, requestSha256, IDEMPOTENCY_LOCK_MS));
  if (claim.kind === 'mismatch') {
    throw ledgerError('IDEMPOTENCY_KEY_MISMATCH', {
      message: 'this Idempotency-Key was used with a different request',
    });
  }
  if (claim.kind === 'in_flight') {
    throw ledgerError('IDEMPOTENCY_IN_FLIGHT', {
      message: 'a request with this Idempotency-Key is in progress',
      retryAfterSeconds: IDEMPOTENCY_RETRY_AFTER_SECONDS,
    });
  }
  if (claim.kind === 'replay') {
    ctx.status = claim.status;
    ctx.body = claim.body;
    ctx.set('Idempotent-Replayed', 'true');
    return;
  }
  let completed = false;
  ctx.state.idempotency = {
    scope,
    markCompleted: () => {
      completed = true;
    },
    complete: async (tx: Tx, status: number, responseBody: unknown) => {
      await completeIdempotencyKey(tx, scope, status, responseBody);
      completed = true;
    },
  } satisfies IdempotencyState;
  try {
    await next();
  } catch (error) {
    await settleFailedClaim(pool, scope, error);
    throw error;
  }
  if (!completed)
    await withTenant(pool, scope.tenantId, (tx) =>
      completeIdempotencyKey(tx, scope, ctx.status, ctx.body),
    );
}
