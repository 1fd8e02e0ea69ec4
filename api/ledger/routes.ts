import Router from '@koa/router';
import { ledgerError } from './errors';
import Joi from 'joi';
import type { Context, Middleware, Next } from 'koa';
import type { DatabasePool } from '../../db/pool';
import type { LedgerRole } from '../../db/ledger/tenants';
import { validate, type ValidatedState } from '../platform/http/validate';
import {
  authenticate,
  authenticateAndClaim,
  forgetKey,
  rememberedPrincipal,
  requireRole,
  type Principal,
} from './credentials';
import {
  IDEMPOTENCY_LOCK_MS,
  requestHashOf,
  runIdempotent,
  settleFailedClaim,
  usableKeyOf,
  type IdempotencyState,
} from './idempotency';
import { claimOutcome, releaseIdempotencyKey } from '../../db/ledger/idempotency';
import { createAssetType, getAssetTypes, patchAssetType } from './asset-types';
import {
  createAccount,
  getAccount,
  getAccounts,
  getBalance,
  getBalanceAsOf,
  getEntries,
  patchAccount,
  type AccountInput,
  type AccountPatch,
} from './accounts';
import {
  createAuthorizedTransaction,
  createTransaction,
  getTransaction,
  parseTransaction,
  POSTING_ENDPOINT,
  POSTING_ROUTE,
  settleTransaction,
  type CreatedTransaction,
  type SettledTransaction,
} from './transactions';
import {
  createSubTenant,
  createSubTenantKey,
  getSubTenantKeys,
  getSubTenants,
  patchSubTenant,
  revokeSubTenantKey,
} from './sub-tenants';
import { LIMITS, parsePage } from './validation';
import type { MeteredCall } from './metering';

export interface LedgerRouteDeps {
  pool: DatabasePool;
  /** Runs before the role check on every authenticated request (monthly quota). */
  meter?: (principal: Principal, ctx: Context) => Promise<MeteredCall>;
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

const assetTypeBody = Joi.object({
  code: Joi.string()
    .min(1)
    .max(LIMITS.assetCodeCharsMax)
    .pattern(/^[A-Za-z0-9._:-]+$/)
    .required(),
  // Any kind but the three (missing, not a string) is INVALID_ASSET_TYPE: createAssetType says so.
  kind: Joi.any(),
  scale: Joi.number().integer().strict().min(0).max(LIMITS.scaleMax).required(),
  description: Joi.any(),
});
const assetTypePatch = Joi.object({
  status: Joi.string().valid('active', 'superseded'),
  description: Joi.any(),
  code: Joi.any(),
  kind: Joi.any(),
  scale: Joi.any(),
}).min(1);
const accountBody = Joi.object({
  asset_type_id: Joi.string().required(),
  name: Joi.any(),
  normal_side: Joi.string().valid('debit', 'credit').required(),
  balance_floor: Joi.any(),
  balance_tracking: Joi.string().valid('sync', 'async'),
  metadata: Joi.any(),
});
const accountPatch = Joi.object({
  name: Joi.any(),
  metadata: Joi.any(),
  status: Joi.string().valid('active', 'frozen', 'closed'),
  balance_floor: Joi.any(),
}).min(1);
const objectBody = Joi.object().unknown(true).required();
const validateObjectBody = validate({ body: objectBody });

/**
 * validate({ body: objectBody }) for the posting route without joi's walk and copy of a body that
 * is already a JSON object (what the schema accepts; its value is a shallow copy of it). Anything
 * else goes through joi, which answers exactly as before.
 */
async function validatePostingBody(ctx: Context, next: Next): Promise<void> {
  const body: unknown = ctx.request.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return validateObjectBody(ctx, next);
  ctx.state.validated = { body: { ...body } } satisfies ValidatedState;
  await next();
}

const principalOf = (ctx: Context) => ctx.state.principal as Principal;
const bodyOf = <T>(ctx: Context) => (ctx.state.validated as ValidatedState).body as T;

export function ledgerRouter(deps: LedgerRouteDeps): Router {
  const router = new Router();
  const { pool } = deps;

  const auth = (role: LedgerRole): Middleware =>
    async function authorize(ctx: Context, next: Next) {
      const principal = await authenticate(pool, ctx.get('Authorization') || undefined);
      ctx.state.principal = principal;
      if (deps.meter) await deps.meter(principal, ctx);
      requireRole(principal, role);
      await next();
    };
  /**
   * auth(role) and the Idempotency-Key claim of a mutating route in one database round trip: the
   * claim is made with the key lookup when the credential authenticates with the role; refusals
   * come out in the order of auth → meter → role → key header → claim, as separate steps would.
   */
  const authOnce = (role: LedgerRole, method: string, path: string): Middleware =>
    async function authorizeOnce(ctx: Context, next: Next) {
      const endpoint = `${method} ${path}`;
      const key = usableKeyOf(ctx);
      const requestSha256 = requestHashOf(ctx);
      const { principal, claim } = await authenticateAndClaim(
        pool,
        ctx.get('Authorization') || undefined,
        role,
        key === null ? null : { endpoint, key, requestSha256, lockMs: IDEMPOTENCY_LOCK_MS },
      );
      ctx.state.principal = principal;
      const outcome = claim && claimOutcome(claim, requestSha256);
      if (deps.meter) {
        try {
          // The meter's verdict, taken once: the one-statement path may have asked it already.
          await ((ctx.state.metering as Promise<MeteredCall> | undefined) ??
            deps.meter(principal, ctx));
        } catch (error) {
          // Over quota (429, transient): the key this request claimed is given back.
          if (outcome?.kind === 'claimed')
            await releaseIdempotencyKey(pool, {
              tenantId: principal.tenantId,
              endpoint,
              key: key!,
            }).catch(() => undefined);
          throw error;
        }
      }
      requireRole(principal, role);
      await runIdempotent(pool, ctx, next, endpoint, requestSha256, outcome);
    };

  router.post(
    '/v1/asset-types',
    authOnce('ledger_admin', 'POST', '/v1/asset-types'),
    validate({ body: assetTypeBody }),
    async (ctx) => {
      const body = bodyOf<{ code: string; kind: unknown; scale: number; description?: string }>(
        ctx,
      );
      const row = await createAssetType(pool, principalOf(ctx).tenantId, body);
      ctx.status = 201;
      ctx.body = row;
    },
  );
  router.get('/v1/asset-types', auth('ledger_reader'), async (ctx) => {
    ctx.body = { asset_types: await getAssetTypes(pool, principalOf(ctx).tenantId) };
  });
  router.patch(
    '/v1/asset-types/:id',
    authOnce('ledger_admin', 'PATCH', '/v1/asset-types/{id}'),
    validate({ body: assetTypePatch }),
    async (ctx) => {
      ctx.body = await patchAssetType(pool, principalOf(ctx).tenantId, ctx.params.id!, bodyOf(ctx));
    },
  );

  router.post(
    '/v1/accounts',
    authOnce('ledger_admin', 'POST', '/v1/accounts'),
    validate({ body: accountBody }),
    async (ctx) => {
      ctx.status = 201;
      ctx.body = await createAccount(pool, principalOf(ctx).tenantId, bodyOf<AccountInput>(ctx));
    },
  );
  router.get('/v1/accounts', auth('ledger_reader'), async (ctx) => {
    ctx.body = await getAccounts(pool, principalOf(ctx).tenantId, parsePage(ctx.query));
  });
  router.get('/v1/accounts/:id', auth('ledger_reader'), async (ctx) => {
    ctx.body = await getAccount(pool, principalOf(ctx).tenantId, ctx.params.id!);
  });
  router.patch(
    '/v1/accounts/:id',
    authOnce('ledger_admin', 'PATCH', '/v1/accounts/{id}'),
    validate({ body: accountPatch }),
    async (ctx) => {
      ctx.body = await patchAccount(
        pool,
        principalOf(ctx).tenantId,
        ctx.params.id!,
        bodyOf<AccountPatch>(ctx),
      );
    },
  );
  router.get('/v1/accounts/:id/balance', auth('ledger_reader'), async (ctx) => {
    ctx.body = await getBalance(pool, principalOf(ctx).tenantId, ctx.params.id!);
  });
  router.get('/v1/accounts/:id/balance-as-of', auth('ledger_reader'), async (ctx) => {
    ctx.body = await getBalanceAsOf(pool, principalOf(ctx).tenantId, ctx.params.id!, ctx.query);
  });
  router.get('/v1/accounts/:id/entries', auth('ledger_reader'), async (ctx) => {
    ctx.body = await getEntries(
      pool,
      principalOf(ctx).tenantId,
      ctx.params.id!,
      parsePage(ctx.query),
      ctx.query.state,
    );
  });

  const answerCreated = (ctx: Context, principal: Principal, created: CreatedTransaction) => {
    if (created.hold && deps.holdPlaced) deps.holdPlaced(principal, created);
    ctx.status = 201;
    ctx.body = presentCreated(created);
  };

  /**
   * The posting route's common case in one statement: a request whose key authenticated before in
   * this process (rememberedPrincipal), with a usable Idempotency-Key and a body that parses, is
   * metered and then posted together with the check of its key and the claim of its
   * Idempotency-Key (createAuthorizedTransaction). Every other request, and every one that
   * statement hands back with nothing written (key no longer admitted, Idempotency-Key already
   * taken, external_id exists), goes on to the general path below, which gives the spec's answer
   * in the order auth → meter → role → key header → claim → body; a request metered here is not
   * metered again, and the count of one whose key no longer passes is taken back.
   */
  async function postInOneStatement(ctx: Context, next: Next): Promise<void> {
    const request = oneStatementRequest(ctx);
    if (request && (await postedInOneStatement(ctx, request))) return;
    await next();
  }

  /** What the one-statement path needs of a request, when it can take it. */
  function oneStatementRequest(ctx: Context) {
    const known = rememberedPrincipal(ctx.get('Authorization') || undefined);
    const key = usableKeyOf(ctx);
    const body: unknown = ctx.request.body;
    if (!known || known.principal.role !== POSTING_ROUTE.role || key === null) return null;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
    try {
      return { ...known, key, parsed: parseTransaction(body, Date.now()) };
    } catch {
      return null;
    }
  }

  /** False: nothing was written, and the general path answers the request. */
  async function postedInOneStatement(
    ctx: Context,
    request: NonNullable<ReturnType<typeof oneStatementRequest>>,
  ): Promise<boolean> {
    const { principal, secretSha256, key, parsed } = request;
    ctx.state.principal = principal;
    const metering = deps.meter?.(principal, ctx);
    ctx.state.metering = metering;
    let metered: MeteredCall | undefined;
    try {
      metered = await metering;
    } catch {
      // Over quota: the general path authenticates first (a key revoked since it was remembered
      // gets its 401), then gives this refusal.
      return false;
    }
    const outcome = await createAuthorizedTransaction(pool, principal.tenantId, parsed, {
      keyId: principal.keyId,
      secretSha256,
      idempotencyKey: key,
      requestSha256: requestHashOf(ctx),
    });
    if ('created' in outcome) {
      deps.countPosting?.('one_statement', 'created');
      answerCreated(ctx, principal, outcome.created);
      return true;
    }
    deps.countPosting?.('one_statement', 'refused' in outcome ? 'refused' : 'handed_back');
    if ('refused' in outcome) {
      const scope = { tenantId: principal.tenantId, endpoint: POSTING_ENDPOINT, key };
      await settleFailedClaim(pool, scope, outcome.refused);
      throw outcome.refused;
    }
    if (outcome.fallback === 'credential') {
      // Not an authenticated call after all: the general path answers it, metering it if it is.
      forgetKey(principal.keyId);
      await metered?.uncount().catch(() => undefined);
      ctx.state.metering = undefined;
    }
    return false;
  }

  router.post(
    POSTING_ROUTE.path,
    postInOneStatement,
    authOnce(POSTING_ROUTE.role, POSTING_ROUTE.method, POSTING_ROUTE.path),
    validatePostingBody,
    async (ctx) => {
      const principal = principalOf(ctx);
      const idempotency = ctx.state.idempotency as IdempotencyState;
      const created = await createTransaction(pool, principal.tenantId, bodyOf(ctx), {
        endpoint: idempotency.scope.endpoint,
        key: idempotency.scope.key,
        status: 201,
      });
      idempotency.markCompleted();
      deps.countPosting?.('general', 'created');
      answerCreated(ctx, principal, created);
    },
  );
  router.get('/v1/transactions/:id', auth('ledger_reader'), async (ctx) => {
    ctx.body = await getTransaction(pool, principalOf(ctx).tenantId, ctx.params.id!);
  });
  for (const action of ['commit', 'void'] as const) {
    router.post(
      `/v1/transactions/:id/${action}`,
      authOnce('ledger_poster', 'POST', `/v1/transactions/{id}/${action}`),
      async (ctx) => {
        const settled = await settleTransaction(
          pool,
          principalOf(ctx).tenantId,
          ctx.params.id!,
          action,
        );
        deps.holdSettled?.(settled);
        ctx.body = settled;
      },
    );
  }

  router.post(
    '/v1/sub-tenants',
    authOnce('ledger_partner', 'POST', '/v1/sub-tenants'),
    validate({ body: objectBody }),
    async (ctx) => {
      ctx.status = 201;
      ctx.body = await createSubTenant(pool, principalOf(ctx), bodyOf(ctx));
    },
  );
  router.get('/v1/sub-tenants', auth('ledger_partner'), async (ctx) => {
    ctx.body = await getSubTenants(pool, principalOf(ctx), parsePage(ctx.query));
  });
  router.patch(
    '/v1/sub-tenants/:id',
    authOnce('ledger_partner', 'PATCH', '/v1/sub-tenants/{id}'),
    validate({ body: objectBody }),
    async (ctx) => {
      ctx.body = await patchSubTenant(pool, principalOf(ctx), ctx.params.id!, bodyOf(ctx));
    },
  );
  router.post(
    '/v1/sub-tenants/:id/keys',
    authOnce('ledger_partner', 'POST', '/v1/sub-tenants/{id}/keys'),
    validate({ body: objectBody }),
    async (ctx) => {
      ctx.status = 201;
      ctx.body = await createSubTenantKey(pool, principalOf(ctx), ctx.params.id!, bodyOf(ctx));
    },
  );
  router.get('/v1/sub-tenants/:id/keys', auth('ledger_partner'), async (ctx) => {
    ctx.body = await getSubTenantKeys(pool, principalOf(ctx), ctx.params.id!, parsePage(ctx.query));
  });
  router.delete(
    '/v1/sub-tenants/:id/keys/:keyId',
    authOnce('ledger_partner', 'DELETE', '/v1/sub-tenants/{id}/keys/{key_id}'),
    async (ctx) => {
      ctx.body = await revokeSubTenantKey(
        pool,
        principalOf(ctx),
        ctx.params.id!,
        ctx.params.keyId!,
      );
    },
  );
  return router;
}

export function presentCreated(created: CreatedTransaction) {
  return {
    transaction_id: created.transaction_id,
    state: created.state,
    created_at: created.created_at,
    accounts: created.accounts,
  };
}

/** Thrown for an authenticated request whose body is not a JSON object where one is needed. */
export const bodyMustBeObject = () =>
  ledgerError('INVALID_REQUEST', { message: 'body must be a JSON object' });
