import Router from '@koa/router';
import type Joi from 'joi';
import type { Context, Middleware, Next } from 'koa';
import type { DatabasePool } from '../../db/pool';
import type { LedgerRole } from '../../db/ledger/tenants';
import { isDomainError } from '../../platform/errors';
import { mount } from '../platform/http/contract';
import type { ValidatedState } from '../platform/http/validate';
import { ledgerError, type LedgerErrorCode } from './errors';
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
import {
  assetTypeNotFound,
  createAssetType,
  getAssetTypes,
  patchAssetType,
  type AssetTypeInput,
} from './asset-types';
import {
  accountNotFound,
  createAccount,
  getAccount,
  getAccounts,
  getBalance,
  getBalanceAsOf,
  getEntries,
  patchAccount,
  type AccountInput,
  type AccountPatch,
  type BalanceAsOfQuery,
  type ENTRY_STATES,
} from './accounts';
import {
  createAuthorizedTransaction,
  createParsedTransaction,
  getTransaction,
  parsedTransactionOf,
  parseTransaction,
  POSTING_ENDPOINT,
  POSTING_ROUTE,
  settleTransaction,
  type CreatedTransaction,
  type SettledTransaction,
  type ValidatedTransaction,
} from './transactions';
import {
  assertRootPartner,
  createSubTenant,
  createSubTenantKey,
  getSubTenantKeys,
  getSubTenants,
  patchSubTenant,
  revokeSubTenantKey,
} from './sub-tenants';
import { isUuid, type Page } from './validation';
import type { MeteredCall } from './metering';
import {
  ACCOUNT_PATCH,
  ASSET_TYPE_PATCH,
  LEDGER_OPERATIONS,
  type LedgerOperation,
} from './operations';

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

const principalOf = (ctx: Context) => ctx.state.principal as Principal;
/** A path parameter of the route (every one is a string: Koa matched it). */
const paramOf = (ctx: Context, name: string): string =>
  (ctx as Context & { params: Record<string, string> }).params[name]!;
const validated = <T>(ctx: Context, part: keyof ValidatedState) =>
  (ctx.state.validated as ValidatedState)[part] as T;

/**
 * A malformed id in the path is 404, after the refusals the route has always given before looking
 * at the id (the body's INVALID_REQUEST, IMMUTABLE_FIELD) and before those it gives after
 * (`later`: the fields' own codes, INVALID_DESCRIPTION...): so a body is validated here first.
 */
function malformedIdNotFound(
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

/**
 * A sub-tenant's partner may not make sub-tenants (INVALID_TENANT), which it is told before any
 * field of its body is judged; a body that is no object at all is INVALID_REQUEST first.
 */
async function rootPartnerOnly(ctx: Context, next: Next): Promise<void> {
  const body: unknown = ctx.request.body;
  if (typeof body === 'object' && body !== null && !Array.isArray(body))
    assertRootPartner(principalOf(ctx));
  await next();
}

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
  const authOnce = (role: LedgerRole, endpoint: string): Middleware =>
    async function authorizeOnce(ctx: Context, next: Next) {
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

  /** The guards of an operation: its role, with the Idempotency-Key claim when it mutates. */
  const authorized = (op: LedgerOperation): Middleware[] => {
    if (op.role === null) return [];
    return [op.idempotency ? authOnce(op.role, op.idempotency.endpoint) : auth(op.role)];
  };
  const ops = LEDGER_OPERATIONS;
  /** An operation behind its role (and Idempotency-Key claim); the few with more guards mount them. */
  const route = (op: LedgerOperation, handler: Middleware) =>
    mount(router, op, authorized(op), handler);

  route(ops.createAssetType, async (ctx) => {
    const body = validated<AssetTypeInput>(ctx, 'body');
    ctx.status = 201;
    ctx.body = await createAssetType(pool, principalOf(ctx).tenantId, body);
  });
  route(ops.listAssetTypes, async (ctx) => {
    ctx.body = { asset_types: await getAssetTypes(pool, principalOf(ctx).tenantId) };
  });
  mount(
    router,
    ops.patchAssetType,
    [
      ...authorized(ops.patchAssetType),
      malformedIdNotFound(
        'asset_type_id',
        ASSET_TYPE_PATCH,
        ['INVALID_DESCRIPTION'],
        assetTypeNotFound,
      ),
    ],
    async (ctx) => {
      ctx.body = await patchAssetType(
        pool,
        principalOf(ctx).tenantId,
        paramOf(ctx, 'asset_type_id'),
        validated(ctx, 'body'),
      );
    },
  );

  route(ops.createAccount, async (ctx) => {
    ctx.status = 201;
    ctx.body = await createAccount(
      pool,
      principalOf(ctx).tenantId,
      validated<AccountInput>(ctx, 'body'),
    );
  });
  route(ops.listAccounts, async (ctx) => {
    ctx.body = await getAccounts(pool, principalOf(ctx).tenantId, validated<Page>(ctx, 'query'));
  });
  route(ops.getAccount, async (ctx) => {
    ctx.body = await getAccount(pool, principalOf(ctx).tenantId, paramOf(ctx, 'account_id'));
  });
  mount(
    router,
    ops.patchAccount,
    [
      ...authorized(ops.patchAccount),
      malformedIdNotFound(
        'account_id',
        ACCOUNT_PATCH,
        ['INVALID_ACCOUNT', 'INVALID_METADATA'],
        accountNotFound,
      ),
    ],
    async (ctx) => {
      ctx.body = await patchAccount(
        pool,
        principalOf(ctx).tenantId,
        paramOf(ctx, 'account_id'),
        validated<AccountPatch>(ctx, 'body'),
      );
    },
  );
  route(ops.getBalance, async (ctx) => {
    ctx.body = await getBalance(pool, principalOf(ctx).tenantId, paramOf(ctx, 'account_id'));
  });
  route(ops.getBalanceAsOf, async (ctx) => {
    ctx.body = await getBalanceAsOf(
      pool,
      principalOf(ctx).tenantId,
      paramOf(ctx, 'account_id'),
      validated<BalanceAsOfQuery>(ctx, 'query'),
    );
  });
  route(ops.listEntries, async (ctx) => {
    const query = validated<Page & { state?: (typeof ENTRY_STATES)[number] }>(ctx, 'query');
    ctx.body = await getEntries(
      pool,
      principalOf(ctx).tenantId,
      paramOf(ctx, 'account_id'),
      query,
      query.state,
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

  mount(
    router,
    ops.postTransaction,
    [postInOneStatement, ...authorized(ops.postTransaction)],
    async (ctx) => {
      const principal = principalOf(ctx);
      const idempotency = ctx.state.idempotency as IdempotencyState;
      const parsed = parsedTransactionOf(validated<ValidatedTransaction>(ctx, 'body'));
      const created = await createParsedTransaction(pool, principal.tenantId, parsed, {
        endpoint: idempotency.scope.endpoint,
        key: idempotency.scope.key,
        status: 201,
      });
      idempotency.markCompleted();
      deps.countPosting?.('general', 'created');
      answerCreated(ctx, principal, created);
    },
  );
  route(ops.getTransaction, async (ctx) => {
    ctx.body = await getTransaction(
      pool,
      principalOf(ctx).tenantId,
      paramOf(ctx, 'transaction_id'),
    );
  });
  for (const [op, action] of [
    [ops.commitTransaction, 'commit'],
    [ops.voidTransaction, 'void'],
  ] as const) {
    route(op, async (ctx) => {
      const settled = await settleTransaction(
        pool,
        principalOf(ctx).tenantId,
        paramOf(ctx, 'transaction_id'),
        action,
      );
      deps.holdSettled?.(settled);
      ctx.body = settled;
    });
  }

  mount(
    router,
    ops.createSubTenant,
    [...authorized(ops.createSubTenant), rootPartnerOnly],
    async (ctx) => {
      ctx.status = 201;
      ctx.body = await createSubTenant(pool, principalOf(ctx), validated(ctx, 'body'));
    },
  );
  route(ops.listSubTenants, async (ctx) => {
    ctx.body = await getSubTenants(pool, principalOf(ctx), validated<Page>(ctx, 'query'));
  });
  route(ops.patchSubTenant, async (ctx) => {
    ctx.body = await patchSubTenant(
      pool,
      principalOf(ctx),
      paramOf(ctx, 'sub_tenant_id'),
      validated(ctx, 'body'),
    );
  });
  route(ops.issueSubTenantKey, async (ctx) => {
    ctx.status = 201;
    ctx.body = await createSubTenantKey(
      pool,
      principalOf(ctx),
      paramOf(ctx, 'sub_tenant_id'),
      validated(ctx, 'body'),
    );
  });
  route(ops.listSubTenantKeys, async (ctx) => {
    ctx.body = await getSubTenantKeys(
      pool,
      principalOf(ctx),
      paramOf(ctx, 'sub_tenant_id'),
      validated<Page>(ctx, 'query'),
    );
  });
  route(ops.revokeSubTenantKey, async (ctx) => {
    ctx.body = await revokeSubTenantKey(
      pool,
      principalOf(ctx),
      paramOf(ctx, 'sub_tenant_id'),
      paramOf(ctx, 'key_id'),
    );
  });
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
