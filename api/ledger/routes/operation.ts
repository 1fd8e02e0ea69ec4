import type Router from '@koa/router';
import type Joi from 'joi';
import type { Context, Middleware, Next } from 'koa';
import type { DatabasePool } from '../../../db/pool';
import type { LedgerRole } from '../../../db/ledger/tenants';
import { claimOutcome, releaseIdempotencyKey } from '../../../db/ledger/idempotency';
import { isDomainError } from '../../../platform/errors';
import {
  mount,
  type HttpMethod,
  type OperationContract,
  type ResponseContract,
} from '../../http/contract';
import type { RequestSchemas, ValidatedState } from '../../http/validate';
import { RATE_LIMIT_RESPONSE_HEADERS } from '../../http/rate-limit-fields';
import {
  authenticate,
  authenticateAndClaim,
  requireRole,
  type Principal,
  type RememberedKeys,
} from '../../../services/ledger/credentials';
import type { LedgerErrorCode } from '../../../services/ledger/errors';
import { IDEMPOTENCY_LOCK_MS } from '../../../db/ledger/idempotency';
import { requestHashOf, runIdempotent, usableKeyOf } from '../idempotency';
import type { CallMeter, MeteredCall } from '../../../services/ledger/metering';
import type { LedgerBatchers } from '../../../services/ledger/batchers';
import { ErrorBody } from '../models';
import type { CreatedTransaction, SettledTransaction } from '../../../services/ledger/transactions';
import { isUuid } from '../../../services/ledger/validation';

/**
 * The ledger's common route parts: the operation declaration every area's contracts use (its
 * document entry and refusals), the guards every authenticated route runs (authentication,
 * metering, role, the Idempotency-Key claim of a mutating route) and the mounting of an operation
 * behind them. Each area (routes/<area>.ts) declares its operations and mounts their handlers.
 */

export interface LedgerRouteDeps {
  pool: DatabasePool;
  /** The app's batchers: postings and key lookups with claims go to Postgres through them. */
  batchers: LedgerBatchers;
  /** Keys that authenticated in this app: the posting route's one-statement path takes them. */
  keys: RememberedKeys;
  /**
   * Runs before the role check on every authenticated request: the monthly call quota, in the
   * quota service; null: metering is off.
   */
  meter?: CallMeter | null;
  /** After a hold is durably recorded: start its expiry workflow now (never awaited by the posting). */
  holdPlaced?: (principal: Principal, created: CreatedTransaction) => void;
  /** Counts a posting request by the path that answered it (ledger_postings_total). */
  countPosting?: (
    path: 'one_statement' | 'general',
    outcome: 'created' | 'refused' | 'handed_back',
  ) => void;
  /** After a hold is committed or voided: end its expiry workflow early. */
  holdSettled?: (settled: SettledTransaction) => void;
}

/**
 * One operation of the ledger: what its route validates (joi) and what its OpenAPI document
 * says, from one declaration. The areas mount them behind the ledger's guards; openapi.ts builds
 * the document from them.
 */
export interface LedgerOperation extends OperationContract {
  /** The role the route requires; null: anyone (probes, the document, the guide). */
  role: LedgerRole | null;
  /** Needs an Idempotency-Key; the endpoint its keys are scoped to (`POST /v1/accounts`). */
  idempotency?: { endpoint: string };
}

// ---------------------------------------------------------------- declarations

export const errorResponse = (description: string): ResponseContract => ({
  description,
  schema: ErrorBody,
});
export const json = (description: string, model: Joi.ObjectSchema): ResponseContract => ({
  description,
  schema: model,
});
const COMMON_ERRORS = {
  '401': errorResponse('UNAUTHENTICATED or CREDENTIAL_EXPIRED'),
  '403': errorResponse(
    'FORBIDDEN (role), TENANT_SUSPENDED, TENANT_NOT_PROVISIONED, TENANT_CONTEXT_MISMATCH',
  ),
  '413': errorResponse('PAYLOAD_TOO_LARGE: over 64 KiB at the edge or 1 MiB at the application'),
  '422': errorResponse('validation failures; see the code (final: do not retry)'),
  '429': {
    ...errorResponse(
      'RATE_LIMITED (edge, per source address: RateLimit-Policy and RateLimit say the bucket, `"address";q=<burst>;w=<burst/rate seconds>`) or QUOTA_EXCEEDED (monthly calls of the root tenant, kept by the quota service; Retry-After until the month ends); Retry-After',
    ),
    headers: RATE_LIMIT_RESPONSE_HEADERS,
  },
  '500': errorResponse('INTERNAL_ERROR with a constant message'),
  '503': errorResponse(
    "AUTHZ_UNAVAILABLE (key store unreachable), AUTHZ_CREDENTIAL_REJECTED (the database refuses the service's own credential; /healthz says rejected), STATEMENT_TIMEOUT or SERVICE_UNAVAILABLE (the database or Redis briefly out of reach, e.g. restarting); Retry-After; transient, retry with the same Idempotency-Key",
  ),
};
const MUTATING_ERRORS = {
  '400': errorResponse('MISSING_IDEMPOTENCY_KEY'),
  '409': errorResponse("IDEMPOTENCY_IN_FLIGHT (Retry-After), and the operation's own conflicts"),
};

interface Declaration {
  method: HttpMethod;
  path: string;
  summary: string;
  role: LedgerRole | null;
  /** The Idempotency-Key scope's path, when it is not the OpenAPI path (kept as keys were scoped). */
  mutating?: { keyPath?: string };
  request?: RequestSchemas;
  ok: [string, string, Joi.ObjectSchema?];
  errors?: Record<string, string>;
  description?: string;
  /** In place of the generated responses (probes). */
  responses?: Record<string, ResponseContract>;
}

/** `Create asset type` → `createAssetType` */
const operationIdOf = (summary: string) =>
  summary
    .replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''))
    .replace(/^./, (c) => c.toLowerCase());

/**
 * An operation with the ledger's common parts: its id from its summary, its role in the
 * description, the refusals every route can answer (and those of an Idempotency-Key when it
 * mutates), and no security when anyone may call it.
 */
export function operation(op: Declaration): LedgerOperation {
  const [status, description, model] = op.ok;
  const responses: Record<string, ResponseContract> = {
    // The edge limiter judged it (api/ledger/edge.ts): its fields are on the answer.
    [status]: {
      ...(model ? json(description, model) : { description }),
      headers: RATE_LIMIT_RESPONSE_HEADERS,
    },
    ...COMMON_ERRORS,
    ...(op.mutating ? MUTATING_ERRORS : {}),
  };
  for (const [code, text] of Object.entries(op.errors ?? {})) responses[code] = errorResponse(text);
  return {
    method: op.method,
    path: op.path,
    operationId: operationIdOf(op.summary),
    summary: op.summary,
    description: `${op.description ?? ''}${op.role ? `\n\nRole: ${op.role}.` : ''}`.trim(),
    role: op.role,
    ...(op.mutating
      ? {
          idempotency: {
            endpoint: `${op.method.toUpperCase()} ${op.mutating.keyPath ?? op.path}`,
          },
        }
      : {}),
    ...(op.request ? { request: op.request } : {}),
    responses: op.responses ?? responses,
    ...(op.role ? {} : { extensions: { security: [] } }),
  };
}

// ---------------------------------------------------------------- request state

export const principalOf = (ctx: Context) => ctx.state.principal as Principal;
/** A path parameter of the route (every one is a string: Koa matched it). */
export const paramOf = (ctx: Context, name: string): string =>
  (ctx as Context & { params: Record<string, string> }).params[name]!;
export const validated = <T>(ctx: Context, part: keyof ValidatedState) =>
  (ctx.state.validated as ValidatedState)[part] as T;
const authorizationOf = (ctx: Context) => ctx.get('Authorization') || undefined;

// ---------------------------------------------------------------- guards

/** The monthly meter's verdict on an authenticated call (429 QUOTA_EXCEEDED past the quota). */
async function meterCall(deps: LedgerRouteDeps, principal: Principal): Promise<void> {
  if (deps.meter) await deps.meter(principal);
}

/**
 * The meter's verdict, taken once: the one-statement path may have asked it already
 * (`ctx.state.metering`). Over quota (429, transient), `giveBack` runs before the refusal.
 */
async function meterCallOnce(
  deps: LedgerRouteDeps,
  principal: Principal,
  ctx: Context,
  giveBack: () => Promise<void>,
): Promise<void> {
  if (!deps.meter) return;
  try {
    await ((ctx.state.metering as Promise<MeteredCall> | undefined) ?? deps.meter(principal));
  } catch (error) {
    await giveBack();
    throw error;
  }
}

/** Authentication, metering and the role, in that order. */
export function authorized(deps: LedgerRouteDeps, role: LedgerRole): Middleware {
  return async function authorize(ctx: Context, next: Next) {
    const principal = await authenticate(deps, authorizationOf(ctx));
    ctx.state.principal = principal;
    await meterCall(deps, principal);
    requireRole(principal, role);
    await next();
  };
}

/**
 * authorized(role) and the Idempotency-Key claim of a mutating route in one database round trip:
 * the claim is made with the key lookup when the credential authenticates with the role; refusals
 * come out in the order of auth → meter → role → key header → claim, as separate steps would.
 */
export function authorizedOnce(
  deps: LedgerRouteDeps,
  role: LedgerRole,
  endpoint: string,
): Middleware {
  const { pool, batchers } = deps;
  return async function authorizeOnce(ctx: Context, next: Next) {
    const key = usableKeyOf(ctx);
    const requestSha256 = requestHashOf(ctx);
    const { principal, claim } = await authenticateAndClaim(
      { credentials: batchers.credentials, keys: deps.keys },
      authorizationOf(ctx),
      role,
      key === null ? null : { endpoint, key, requestSha256, lockMs: IDEMPOTENCY_LOCK_MS },
    );
    ctx.state.principal = principal;
    const outcome = claim && claimOutcome(claim, requestSha256);
    // Over quota: the key this request claimed is given back.
    await meterCallOnce(deps, principal, ctx, async () => {
      if (outcome?.kind === 'claimed')
        await releaseIdempotencyKey(pool, {
          tenantId: principal.tenantId,
          endpoint,
          key: key!,
        }).catch(() => undefined);
    });
    requireRole(principal, role);
    await runIdempotent(pool, ctx, next, endpoint, requestSha256, outcome);
  };
}

/** The guards of an operation: its role, with the Idempotency-Key claim when it mutates. */
export function guardsOf(deps: LedgerRouteDeps, op: LedgerOperation): Middleware[] {
  if (op.role === null) return [];
  return [
    op.idempotency
      ? authorizedOnce(deps, op.role, op.idempotency.endpoint)
      : authorized(deps, op.role),
  ];
}

/** What an operation runs around its guards: `before` them (the posting's one statement), `after`. */
export interface AroundGuards {
  before?: Middleware[];
  after?: Middleware[];
}

/**
 * Mounts an operation behind its role (and Idempotency-Key claim), then its validation, then its
 * handler; the few routes with more guards name them in `around`.
 */
export function mountOperation(
  router: Router,
  deps: LedgerRouteDeps,
  op: LedgerOperation,
  handler: Middleware,
  around: AroundGuards = {},
): void {
  const guards = [...(around.before ?? []), ...guardsOf(deps, op), ...(around.after ?? [])];
  mount(router, op, guards, handler);
}

/**
 * A malformed id in the path is 404, after the refusals the route has always given before looking
 * at the id (the body's INVALID_REQUEST, IMMUTABLE_FIELD) and before those it gives after
 * (`later`: the fields' own codes, INVALID_DESCRIPTION...): so a body is validated here first.
 */
export function malformedIdNotFound(
  param: string,
  body: Joi.Schema,
  later: readonly LedgerErrorCode[],
  notFound: () => Error,
): Middleware {
  return async function notFoundBeforeFields(ctx: Context, next: Next) {
    const input: unknown = ctx.request.body;
    if (input !== undefined && !isUuid(paramOf(ctx, param))) {
      const { error } = body.validate(input, { abortEarly: false });
      const refusal: unknown = error;
      if (!refusal || (isDomainError(refusal) && later.includes(refusal.code as LedgerErrorCode)))
        throw notFound();
    }
    await next();
  };
}
