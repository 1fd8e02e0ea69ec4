import Router from '@koa/router';
import Joi from 'joi';
import type { Context, Next } from 'koa';
import { runsError } from './errors';
import { validate, type ValidatedState } from '../platform/http/validate';
import { boundedText } from '../platform/http/text';
import { isUtcInstant } from '../platform/instant';
import type { PlatformDeps } from '../platform/service';
import { RUN_STATES, type RunState } from '../../db/runs/runs';
import { authenticate, principalOf, requirePermission, tenantRateLimit } from './auth';
import { IMAGE_REFERENCE_MAX_LENGTH } from './image-reference';
import { getRunResult, getRunStatus, getUtilization, listTenantRuns } from './reads';
import { LOGS_LIMIT_DEFAULT, LOGS_LIMIT_MAX, readRunLogs } from './logs';
import type { LogStream } from './log-store';
import { submitRun, type SubmitRequest } from './submit';
import type { WorkflowStarter } from './workflow-starter';
import { controlRun, deleteRun } from './control';
import { getQuotas, getUsage, listAuditRecords, putQuotas, QUOTA_BODY } from './tenant';
import type { ControlAction } from '../../workflows/runs/definitions';
import { auditRefusals } from './refusals';

export const RUN_NAME_MAX_LENGTH = 128;
export const COMMAND_ITEMS_MAX = 256;
export const COMMAND_ITEM_MAX_LENGTH = 8192;
export const ENV_ENTRIES_MAX = 256;
export const ENV_VALUE_MAX_LENGTH = 32768;
export const TAGS_MAX = 32;
export const TAG_MAX_LENGTH = 64;
export const RUNS_LIST_LIMIT_DEFAULT = 100;
export const RUNS_LIST_LIMIT_MAX = 1000;
export const AUDIT_LIMIT_DEFAULT = 100;
export const AUDIT_LIMIT_MAX = 1000;
/**
 * A requested limit above the tenant's maximum is clamped to it (`clamped: true`), however large:
 * the only bound is what a JSON number holds exactly.
 */
export const REQUESTED_LIMIT_MAX = Number.MAX_SAFE_INTEGER;
/** Docker's CPU resolution: a request is rounded to it, so less would round to 0 (no limit). */
export const CPU_LIMIT_MIN = 0.001;

/** ISO-8601 UTC instant that carries the Z suffix (the spec refuses offsets), on a real day. */
export const utcInstant = () =>
  Joi.string().custom((value: string, helpers) =>
    isUtcInstant(value)
      ? value
      : helpers.message({
          custom: '{{#label}} must be an ISO-8601 UTC instant with the Z suffix, on a real date',
        }),
  );

const submitBody = Joi.object({
  image: Joi.string().max(IMAGE_REFERENCE_MAX_LENGTH).required(),
  // An empty argument is an argument (`sh -c ''`, `printf ''`).
  command: Joi.array()
    .items(boundedText(COMMAND_ITEM_MAX_LENGTH).allow(''))
    .max(COMMAND_ITEMS_MAX)
    .default([]),
  env: Joi.object()
    .pattern(
      Joi.string().pattern(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/),
      boundedText(ENV_VALUE_MAX_LENGTH).allow(''),
    )
    .max(ENV_ENTRIES_MAX)
    .default({}),
  scheduled_start: utcInstant().allow(null).default(null),
  expires_at: utcInstant(),
  timeout_seconds: Joi.number().integer().min(1).max(REQUESTED_LIMIT_MAX).allow(null).default(null),
  cpu_limit: Joi.number().min(CPU_LIMIT_MIN).max(REQUESTED_LIMIT_MAX).allow(null).default(null),
  memory_limit_mb: Joi.number().integer().min(6).max(REQUESTED_LIMIT_MAX).allow(null).default(null),
  name: boundedText(RUN_NAME_MAX_LENGTH).allow(null),
  tags: Joi.array().items(boundedText(TAG_MAX_LENGTH).min(1)).max(TAGS_MAX).unique().default([]),
})
  .required()
  .unknown(false);

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

const stateFilter = Joi.string()
  .pattern(new RegExp(`^(${RUN_STATES.join('|')})(,(${RUN_STATES.join('|')}))*$`))
  .message(`state_filter must be one or more of ${RUN_STATES.join(', ')}, comma-separated`);

const listQuery = Joi.object({
  state_filter: stateFilter,
  tag: boundedText(TAG_MAX_LENGTH),
  limit: Joi.number().integer().min(1).max(RUNS_LIST_LIMIT_MAX).default(RUNS_LIST_LIMIT_DEFAULT),
  offset: Joi.number().integer().min(0).default(0),
});

const logsQuery = Joi.object({
  stream: Joi.string().valid('stdout', 'stderr', 'both').default('both'),
  since: Joi.number().integer().min(0),
  limit: Joi.number().integer().min(1).max(LOGS_LIMIT_MAX).default(LOGS_LIMIT_DEFAULT),
});

const trackIdParams = Joi.object({
  trackId: Joi.string()
    .pattern(/^[0-9A-HJKMNP-TV-Z]{26}$/i)
    .required(),
}).unknown(true);

const validated = <T>(ctx: Context, part: keyof ValidatedState): T =>
  (ctx.state.validated as ValidatedState)[part] as T;

/** Every /api/v1 route of the runs half: bearer key, per-tenant rate limit, permission. */
export function runsRouter(deps: PlatformDeps, starter: WorkflowStarter): Router {
  const router = new Router({ prefix: '/api/v1' });
  const can = requirePermission;
  router.use(authenticate(deps.pool));
  router.use(auditRefusals(deps.pool));
  router.use(
    tenantRateLimit(deps.redis, {
      requests: deps.config.runs.rateLimitRequests,
      windowSeconds: deps.config.runs.rateLimitWindowSeconds,
    }),
  );
  // A 404 for a run that is not the tenant's must not depend on the trackId's shape.
  const trackId = async (ctx: Context, next: Next) => {
    const { error } = trackIdParams.validate((ctx as Context & { params: unknown }).params);
    if (error) throw runsError('run_not_found');
    await next();
  };

  router.post(
    'run.submit',
    '/runs',
    can('svc_run_submit'),
    onlyQuery(),
    validate({ body: submitBody }),
    async (ctx) => {
      const body = validated<Record<string, unknown>>(ctx, 'body');
      const request: SubmitRequest = {
        image: body.image as string,
        command: body.command as string[],
        env: body.env as Record<string, string>,
        scheduledStart: body.scheduled_start as string | null,
        expiresAt: (body.expires_at as string | undefined) ?? null,
        timeoutSeconds: body.timeout_seconds as number | null,
        cpuLimit: body.cpu_limit as number | null,
        memoryLimitMb: body.memory_limit_mb as number | null,
        name: (body.name as string | null | undefined) ?? null,
        tags: body.tags as string[],
      };
      ctx.status = 202;
      ctx.body = await submitRun(deps, starter, principalOf(ctx), request);
    },
  );

  router.get(
    'run.list',
    '/runs',
    can('svc_run_read'),
    onlyQuery('state_filter', 'tag', 'limit', 'offset'),
    validate({ query: listQuery }),
    async (ctx) => {
      const q = validated<{ state_filter?: string; tag?: string; limit: number; offset: number }>(
        ctx,
        'query',
      );
      const states = q.state_filter ? (q.state_filter.split(',') as RunState[]) : null;
      ctx.body = await listTenantRuns(deps, principalOf(ctx).tenantId, {
        states,
        tag: q.tag ?? null,
        limit: q.limit,
        offset: q.offset,
      });
    },
  );

  router.get(
    'run.get',
    '/runs/:trackId',
    can('svc_run_read'),
    onlyQuery(),
    trackId,
    async (ctx) => {
      ctx.body = await getRunStatus(
        deps,
        principalOf(ctx).tenantId,
        ctx.params.trackId!.toUpperCase(),
      );
    },
  );
  router.get(
    'run.result',
    '/runs/:trackId/result',
    can('svc_run_read'),
    onlyQuery(),
    trackId,
    async (ctx) => {
      ctx.body = await getRunResult(
        deps,
        principalOf(ctx).tenantId,
        ctx.params.trackId!.toUpperCase(),
      );
    },
  );
  for (const action of ['pause', 'resume', 'stop', 'kill'] as ControlAction[]) {
    router.post(
      `run.${action}`,
      `/runs/:trackId/${action}`,
      can('svc_run_control'),
      onlyQuery(),
      trackId,
      async (ctx) => {
        await controlRun(deps, principalOf(ctx), ctx.params.trackId!.toUpperCase(), action);
        ctx.status = 204;
      },
    );
  }
  router.get(
    'run.logs',
    '/runs/:trackId/logs',
    can('svc_run_read'),
    onlyQuery('stream', 'since', 'limit'),
    trackId,
    validate({ query: logsQuery }),
    async (ctx) => {
      const q = validated<{ stream: LogStream; since?: number; limit: number }>(ctx, 'query');
      const { page, source } = await readRunLogs(
        deps,
        principalOf(ctx).tenantId,
        ctx.params.trackId!.toUpperCase(),
        {
          stream: q.stream,
          since: q.since ?? null,
          limit: q.limit,
        },
      );
      ctx.set('X-Log-Source', source);
      ctx.body = page;
    },
  );
  router.get(
    'run.utilization',
    '/runs/:trackId/utilization',
    can('svc_run_read'),
    onlyQuery('from_ts', 'to_ts'),
    trackId,
    validate({ query: Joi.object({ from_ts: utcInstant(), to_ts: utcInstant() }) }),
    async (ctx) => {
      const q = validated<{ from_ts?: string; to_ts?: string }>(ctx, 'query');
      ctx.body = await getUtilization(
        deps,
        principalOf(ctx).tenantId,
        ctx.params.trackId!.toUpperCase(),
        {
          from: q.from_ts ?? null,
          to: q.to_ts ?? null,
        },
      );
    },
  );
  router.delete(
    'run.delete',
    '/runs/:trackId',
    can('svc_run_delete'),
    onlyQuery(),
    trackId,
    async (ctx) => {
      await deleteRun(deps, principalOf(ctx), ctx.params.trackId!.toUpperCase());
      ctx.status = 204;
    },
  );

  router.get(
    'tenant.quotas.get',
    '/tenant/quotas',
    can('svc_run_read'),
    onlyQuery(),
    async (ctx) => {
      ctx.body = await getQuotas(deps, principalOf(ctx));
    },
  );
  router.put(
    'tenant.quotas.update',
    '/tenant/quotas',
    can('svc_tenant_admin'),
    onlyQuery(),
    validate({ body: QUOTA_BODY }),
    async (ctx) => {
      ctx.body = await putQuotas(
        deps,
        principalOf(ctx),
        validated<Record<string, unknown>>(ctx, 'body'),
      );
    },
  );
  router.get('usage.get', '/usage', can('svc_run_read'), onlyQuery(), async (ctx) => {
    ctx.body = await getUsage(deps, principalOf(ctx));
  });
  router.get(
    'audit.list',
    '/audit',
    can('svc_run_read'),
    onlyQuery('limit', 'offset'),
    validate({
      query: Joi.object({
        limit: Joi.number().integer().min(1).max(AUDIT_LIMIT_MAX).default(AUDIT_LIMIT_DEFAULT),
        offset: Joi.number().integer().min(0).default(0),
      }),
    }),
    async (ctx) => {
      ctx.body = await listAuditRecords(
        deps,
        principalOf(ctx),
        validated<{ limit: number; offset: number }>(ctx, 'query'),
      );
    },
  );
  return router;
}
