import type Router from '@koa/router';
import Joi from 'joi';
import type { Context, Middleware, Next } from 'koa';
import type { DatabasePool } from '../../../db/pool';
import type { Redis } from '../../../db/redis';
import { mount, type OperationContract, type ResponseContract } from '../../http/contract';
import type { ValidatedState } from '../../http/validate';
import type { Client } from '@temporalio/client';
import type { Config } from '../../../platform/config';
import type { Logger } from '../../../platform/logger';
import { authenticate, type Principal } from '../../../services/quota/credentials';
import type { ErrorDefinition } from '../../../platform/errors';
import { QUOTA_ERRORS, quotaError, type QuotaErrorCode } from '../../../services/quota/errors';
import type { LastUseRecorder } from '../../../services/quota/last-use';
import { isOperatorScope, type Scope } from '../../../services/quota/scopes';
import type { BootstrapStarter } from '../../../services/quota/tenants';
import type { CatalogueCache } from '../../../services/quota/catalogue-cache';
import type { StrictBatchers } from '../../../services/quota/consumption/in-one-statement';
import type { Caller } from '../../../services/quota/consumption/consume';

export interface QuotaRouteDeps {
  config: Config;
  logger: Logger;
  temporal: Client;
  pool: DatabasePool;
  redis: Redis;
  lastUse: LastUseRecorder;
  bootstraps: BootstrapStarter;
  /** Tenants' catalogues and subjects' plans as requests are judged by them, from memory. */
  catalogues: CatalogueCache;
  /** The app's group commit of strict decisions and reads. */
  strictBatchers: StrictBatchers;
  /** When this API started (the jobs' health counts a job never run from here). */
  startedAtMs: number;
}

/** Who may call an operation: a scope, any tenant key (`tenant`), or anyone (`public`: probes). */
export type Access = Scope | 'tenant' | 'public';

type Refusals = Partial<Record<number, QuotaErrorCode[]>>;

export interface QuotaOperation extends OperationContract {
  access: Access;
  /** The service's own refusals of this operation by status (those of auth are added). */
  refusals?: Refusals;
  /** A cookie that may carry the key instead of `Authorization` (a browser's codec session). */
  keyCookie?: string;
  /**
   * The operation's decision checks the catalogue's generations in its own store step
   * (catalogue-cache.ts), so its guard judges the key from memory without a round trip first,
   * and the handler judges it again (`callerOf`) when the decision finds them moved.
   */
  decides?: boolean;
}

export const principalOf = (ctx: Context): Principal => ctx.state.principal as Principal;
/** The caller of an operation that `decides`, and how to judge them again. */
export const callerOf = (ctx: Context): Caller => ({
  principal: principalOf(ctx),
  reauthorize: ctx.state.reauthorize as Caller['reauthorize'],
});
export const validated = <T>(ctx: Context, part: keyof ValidatedState): T =>
  (ctx.state.validated as ValidatedState)[part] as T;

/** The caller of a request, if it may call an operation of this access. */
async function authorizeCaller(
  deps: QuotaRouteDeps,
  authorization: string | undefined,
  access: Exclude<Access, 'public'>,
  verify: boolean,
): Promise<Principal> {
  const principal = await authenticate(deps.catalogues, authorization, { verify });
  const operatorRoute = access !== 'tenant' && isOperatorScope(access);
  if (operatorRoute && principal.tenantId !== null) throw quotaError('operator_key_required');
  if (!operatorRoute && principal.tenantId === null) throw quotaError('tenant_key_required');
  if (access !== 'tenant' && !principal.scopes.includes(access))
    throw quotaError('insufficient_scope', {
      challenge: `Bearer error="insufficient_scope", scope="${access}"`,
    });
  return principal;
}

/** Authenticates the caller and checks it may call the operation. */
function guard(deps: QuotaRouteDeps, op: QuotaOperation & { access: Exclude<Access, 'public'> }) {
  return async function authorize(ctx: Context, next: Next) {
    const cookie = op.keyCookie ? ctx.cookies.get(op.keyCookie) : undefined;
    const authorization = ctx.get('Authorization') || (cookie ? `Bearer ${cookie}` : undefined);
    // A refusal judged from memory (an operation that `decides`) stands only once checked.
    const principal = await authorizeCaller(deps, authorization, op.access, !op.decides).catch(
      (error: unknown) => {
        if (!op.decides) throw error;
        return authorizeCaller(deps, authorization, op.access, true);
      },
    );
    deps.lastUse.used(principal.keyRowId);
    ctx.state.principal = principal;
    if (op.decides)
      ctx.state.reauthorize = () => authorizeCaller(deps, authorization, op.access, false);
    await next();
  };
}

export const ERROR_SCHEMA = Joi.object({
  detail: Joi.string().required().description('the error code'),
}).id('Error');

const ValidationErrorSchema = Joi.object({
  loc: Joi.array()
    .items(Joi.alternatives(Joi.string().allow(''), Joi.number().integer()))
    .required(),
  msg: Joi.string().required(),
  type: Joi.string().required(),
}).id('ValidationError');
export const HTTP_VALIDATION_ERROR = Joi.object({
  detail: Joi.array().items(ValidationErrorSchema).required(),
}).id('HTTPValidationError');

/** A refusal response listing its codes, so a client reads the codes an operation can answer. */
function refusal(status: number, codes: QuotaErrorCode[]): ResponseContract {
  const described = codes.map((code) => {
    const definition: ErrorDefinition = QUOTA_ERRORS[code];
    return `\`${code.toLowerCase()}\`: ${definition.description ?? definition.message}`;
  });
  return { description: described.join('; '), schema: ERROR_SCHEMA };
}

/** The refusals every operation can answer by who may call it, by status. */
function authRefusals(access: Access): Refusals {
  // A probe refuses nothing but a method its path does not serve (405 with Allow).
  if (access === 'public') return { 405: ['METHOD_NOT_ALLOWED'] };
  const forbidden: QuotaErrorCode[] =
    access === 'tenant'
      ? ['tenant_suspended', 'tenant_key_required']
      : isOperatorScope(access)
        ? ['insufficient_scope', 'operator_key_required']
        : ['insufficient_scope', 'tenant_suspended', 'tenant_key_required'];
  return {
    401: ['unauthorized'],
    403: forbidden,
    503: ['tenant_bootstrap_pending', 'SERVICE_UNAVAILABLE'],
  };
}

/** Every refusal of an operation, its own and those of auth: one response per status. */
function refusalsOf(contract: QuotaOperation): Record<string, ResponseContract> {
  const byStatus = new Map<number, Set<QuotaErrorCode>>();
  for (const refusals of [authRefusals(contract.access), contract.refusals ?? {}])
    for (const [status, codes] of Object.entries(refusals)) {
      const all = byStatus.get(Number(status)) ?? new Set<QuotaErrorCode>();
      for (const code of codes ?? []) all.add(code);
      byStatus.set(Number(status), all);
    }
  return Object.fromEntries(
    [...byStatus].map(([status, codes]) => [String(status), refusal(status, [...codes])]),
  );
}

/**
 * An operation with the quota service's common parts: its security and required scope in the
 * document, and the refusals of authentication, authorization and validation.
 */
export function operation(contract: QuotaOperation): QuotaOperation {
  const validates = contract.request !== undefined;
  const secured = contract.access !== 'public';
  return {
    ...contract,
    extensions: {
      security: secured
        ? [{ bearer: [] }, ...(contract.keyCookie ? [{ [contract.keyCookie]: [] }] : [])]
        : [],
      ...(secured ? { 'x-required-scope': contract.access } : {}),
      ...contract.extensions,
    },
    responses: {
      ...refusalsOf(contract),
      ...(validates
        ? { '422': { description: 'the request failed validation', schema: HTTP_VALIDATION_ERROR } }
        : {}),
      ...contract.responses,
    },
  };
}

/** Mounts an operation behind its guard (after `before`, e.g. CORS): 401/403 come before any 422. */
export function mountOperation(
  router: Router,
  deps: QuotaRouteDeps,
  op: QuotaOperation,
  handler: Middleware,
  before: Middleware[] = [],
): void {
  const { access } = op;
  const guards = access === 'public' ? [] : [guard(deps, { ...op, access })];
  mount(router, op, [...before, ...guards], handler);
}
