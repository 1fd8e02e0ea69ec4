import type Router from '@koa/router';
import Joi from 'joi';
import type { Context, Middleware, Next } from 'koa';
import { mount, type OperationContract, type ResponseContract } from '../../http/contract';
import type { ValidatedState } from '../../http/validate';
import type { PlatformDeps } from '../../../platform/deps';
import type { Permission } from '../../../db/runs/permissions';
import { authenticate, requirePermission, tenantRateLimit } from '../auth';
import type { DagStarter } from '../../../services/runs/dags/starter';
import type { MeteringDeps } from '../../../services/runs/metering';
import type { LogReadDeps } from '../../../services/runs/logs';
import { runsError } from '../../../services/runs/errors';
import { ErrorBody } from '../../../services/runs/models';
import { auditRefusals } from '../refusals';
import { ulidParam } from '../../../services/runs/schemas';
import type { TimerStarter } from '../../../services/runs/timers/starter';
import type { DeliveryStarter } from '../../../services/runs/webhooks/starter';
import type { WorkflowStarter } from '../../../services/runs/workflow-starter';
import { RATE_LIMIT_RESPONSE_HEADERS } from '../../http/rate-limit-fields';

/**
 * The runs service's common route parts: the operation declaration every area's contracts use (its
 * security, permission and refusals in the document), the guards every tenant route runs (bearer
 * key, refusal audit, per-tenant rate limit; then the operation's permission and its query
 * parameters) and the mounting of an operation behind them. Each area (routes/<area>.ts) declares
 * its operations and mounts their handlers.
 */

/** What starts the service's workflows after a submit commits: runs, DAGs, webhook deliveries. */
export interface Starters {
  runs: WorkflowStarter;
  dags: DagStarter;
  deliveries: DeliveryStarter;
  timers: TimerStarter;
}

/**
 * What the tenant routes are given: the platform's backends and the process's metering client
 * (submit, DAG submit, template runs and usage reads meter through it; null: metering is off).
 */
export type RunsDeps = PlatformDeps & MeteringDeps & Pick<LogReadDeps, 'logObjects'>;

// ---------------------------------------------------------------- declarations

/** A run in the path: an operation with these params can answer 404 `run_not_found`. */
export const trackIdParams = Joi.object({ track_id: ulidParam(() => runsError('run_not_found')) });

/** What each refusal status of the runs service means, for the operations that can answer it. */
export const REFUSALS = {
  '400':
    'Malformed JSON, invalid image reference (`invalid_image:<ref>`), `expires_at_in_past`, or an unknown query parameter (the detail names the supported set).',
  '401': 'Missing or invalid bearer key (`WWW-Authenticate: Bearer`).',
  '403': "`permission_denied`, or `image_not_allowed` when the key's tier has an allowlist.",
  '404': "`run_not_found`: no such run, or not this tenant's.",
  '409': 'Conflict; see the operation.',
  '413': 'The body is over 1 MiB (`request body exceeds 1048576 bytes`).',
  '415':
    'A body that is not `application/json` (`request body must be application/json`), on any method that may carry one.',
  '422': 'Schema mismatch (joi message), or `invalid_shift_definition: ...`.',
  '429':
    '`daily_quota_exceeded`, `metered_quota_exceeded` (submit on a metered key at its daily cap) or `rate_limited` (with `Retry-After`; RateLimit-Policy and RateLimit say the window, `"tenant";q=<requests>;w=<seconds>`).',
  '503':
    "`a backend is briefly unreachable; retry` (Postgres or Redis restarting), `metering_unavailable` (a metered key's submit or usage read while the quota service does not answer; nothing was written), or for a control `workflow_unavailable` (the run's workflow did not answer within 5 s; the control may still be carried out: read the run before retrying); with Retry-After.",
  '405': 'Method not allowed (`Allow` names the methods).',
} as const;
type RefusalStatus = keyof typeof REFUSALS;

export const refusal = (description: string): ResponseContract => ({
  description,
  schema: ErrorBody,
});

export interface RunsOperation extends OperationContract {
  /** The permission a key needs; none: a public probe or an operator route. */
  permission?: Permission;
  /** Refusals beyond those its shape implies, with this operation's own wording where given. */
  refusals?: Partial<Record<RefusalStatus, string | true>>;
}

/** The refusals an operation's shape implies: auth, a body, a query, a run in the path. */
function impliedRefusals(op: RunsOperation): RefusalStatus[] {
  const statuses: RefusalStatus[] = [];
  if (op.permission) statuses.push('400', '401', '403', '429', '503');
  if (op.method !== 'get') statuses.push('413', '415');
  if (op.request?.body || op.request?.query) statuses.push('422');
  if (op.request?.params === trackIdParams) statuses.push('404');
  return statuses;
}

/** An operation with its security, permission and refusals stated in the document. */
export function runsOperation(op: RunsOperation): RunsOperation {
  const own = Object.entries(op.refusals ?? {}) as [RefusalStatus, string | true][];
  const refusals = Object.fromEntries([
    ...impliedRefusals(op).map((status) => [status, refusal(REFUSALS[status])]),
    ...own.map(([status, text]) => [status, refusal(text === true ? REFUSALS[status] : text)]),
  ]) as Record<string, ResponseContract>;
  return {
    ...op,
    extensions: op.permission
      ? { security: [{ bearer: [] }], 'x-permission': op.permission, ...op.extensions }
      : { security: [], ...op.extensions },
    responses: op.permission
      ? withRateLimitFields({ ...refusals, ...op.responses })
      : { ...refusals, ...op.responses },
  };
}

/** The tenant limiter judged every answer but the ones before it (auth): its fields say so. */
function withRateLimitFields(
  responses: Record<string, ResponseContract>,
): Record<string, ResponseContract> {
  const judged = (status: string) => /^2/.test(status) || status === '429';
  return Object.fromEntries(
    Object.entries(responses).map(([status, response]) => [
      status,
      judged(status)
        ? { ...response, headers: { ...response.headers, ...RATE_LIMIT_RESPONSE_HEADERS } }
        : response,
    ]),
  );
}

/**
 * The operation maker of an area (timers, schedules, triggers): each operation its permission,
 * and the area's refusals under the operation's own.
 */
export const areaOperations =
  (refusals: RunsOperation['refusals']) =>
  (permission: NonNullable<RunsOperation['permission']>) =>
  (op: Omit<RunsOperation, 'permission'>) =>
    runsOperation({ ...op, permission, refusals: { ...refusals, ...op.refusals } });

export const ok = (schema: Joi.Schema, description = 'OK'): ResponseContract => ({
  description,
  schema,
});
export const done = (description: string): ResponseContract => ({ description });

// ---------------------------------------------------------------- request state

export const validated = <T>(ctx: Context, part: keyof ValidatedState): T =>
  (ctx.state.validated as ValidatedState)[part] as T;
export const trackIdOf = (ctx: Context) => validated<{ track_id: string }>(ctx, 'params').track_id;
export const workflowIdOf = (ctx: Context) =>
  validated<{ workflow_id: string }>(ctx, 'params').workflow_id;
export const nodeRefOf = (ctx: Context) => validated<{ ref: string }>(ctx, 'params').ref;

/** `key=value` selectors: the value is everything after the first '=' (its schema: key, '=', value). */
export const labelPairsOf = (selectors: string[] | undefined): [string, string][] =>
  (selectors ?? []).map((selector) => {
    const at = selector.indexOf('=');
    return [selector.slice(0, at), selector.slice(at + 1)];
  });

// ---------------------------------------------------------------- guards

/** Refuses query parameters a route does not support: 400 naming the supported set. */
export function onlyQuery(...supported: string[]) {
  return async function refuseUnknownQuery(ctx: Context, next: Next): Promise<void> {
    const unknown = Object.keys(ctx.query).filter((key) => !supported.includes(key));
    if (unknown.length > 0) {
      throw runsError('unknown_query_parameter', {
        message: `unknown query parameter(s): ${unknown.join(', ')}; supported: ${supported.join(', ') || '(none)'}`,
      });
    }
    await next();
  };
}

/** The query parameters an operation declares: the only ones it takes. */
const queryKeysOf = (op: RunsOperation): string[] =>
  Object.keys((op.request?.query?.describe() as { keys?: object } | undefined)?.keys ?? {});

/**
 * The guards of every /api/v1 route of the tenant API, router-wide and in this order: bearer key,
 * the audit of refusals, per-tenant rate limit.
 */
export function useTenantGuards(router: Router, deps: PlatformDeps): void {
  router.use(authenticate(deps.pool));
  router.use(auditRefusals(deps.pool));
  router.use(
    tenantRateLimit(deps.redis, {
      requests: deps.config.runs.rateLimitRequests,
      windowSeconds: deps.config.runs.rateLimitWindowSeconds,
    }),
  );
}

/**
 * Mounts an operation behind its permission (and, for a route that needs more, those `also`
 * named); unknown query parameters are refused before validation.
 */
export function mountOperation(
  router: Router,
  op: RunsOperation,
  handler: Middleware,
  also: Permission[] = [],
): void {
  mount(
    router,
    op,
    [requirePermission(op.permission!, ...also), onlyQuery(...queryKeysOf(op))],
    handler,
  );
}
