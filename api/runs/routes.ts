import Router from '@koa/router';
import type Joi from 'joi';
import type { Context, Middleware, Next } from 'koa';
import { runsError } from './errors';
import { mount } from '../platform/http/contract';
import type { ValidatedState } from '../platform/http/validate';
import type { PlatformDeps } from '../../platform/deps';
import type { RunState } from '../../db/runs/runs';
import type { Permission } from '../../db/runs/permissions';
import { authenticate, principalOf, requirePermission, tenantRateLimit } from './auth';
import { getRunResult, getRunStatus, getUtilization, listTenantRuns } from './reads';
import { readRunLogs } from './logs';
import type { LogStream } from './log-store';
import { submitRun, type SubmitRequest } from './submit';
import type { WorkflowStarter } from './workflow-starter';
import { controlRun, deleteRun } from './control';
import { getQuotas, getUsage, listAuditRecords, putQuotas } from './tenant';
import { auditRefusals } from './refusals';
import { RUNS_OPERATIONS, type RunsOperation } from './operations';
import { WORKFLOW_OPERATIONS } from './dags/operations';
import type { DagStarter } from './dags/starter';
import { submitWorkflow, type WorkflowSubmitBody } from './dags/submit';
import {
  getNodeDetail,
  getWorkflowResult,
  getWorkflowStatus,
  listTenantWorkflows,
  listWorkflowEvents,
} from './dags/reads';
import { controlWorkflow, decideGate, retryNode } from './dags/control';
import type { WorkflowState } from '../../db/runs/workflows';
import type { DeliveryFilter, DeliveryState } from '../../db/runs/webhooks';
import { RequestValidationError } from '../../platform/errors';
import type { InlineWebhookBody } from './webhooks/inline';
import type { DeliveryStarter } from './webhooks/starter';
import { TestRequest, WEBHOOK_OPERATIONS } from './webhooks/operations';
import { TEMPLATE_OPERATIONS } from './templates/operations';
import {
  deleteTemplate,
  getTemplate,
  listTenantTemplates,
  patchTemplate,
  registerTemplate,
  runTemplate,
  type TemplateCreate,
  type TemplatePatch,
  type TemplateRunBody,
} from './templates/service';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listTenantEndpoints,
  patchEndpoint,
  rotateSecret,
  sendTestDelivery,
  type EndpointPatch,
} from './webhooks/endpoints';
import {
  getDelivery,
  listEndpointDeliveries,
  listRunDeliveries,
  listWorkflowDeliveries,
  redeliver,
} from './webhooks/deliveries';
import { TIMER_OPERATIONS } from './timers/operations';
import type { TimerStarter } from './timers/starter';
import {
  createTimer,
  deleteTimer,
  getTimer,
  listTenantTimers,
  type TimerCreateBody,
} from './timers/timers';
import type { TimerState } from '../../db/runs/timers';
import { TRIGGER_OPERATIONS } from './triggers/operations';
import {
  createTrigger,
  deleteTrigger,
  getTrigger,
  listFires as listTriggerFires,
  listTenantTriggers,
  patchTrigger,
  type TriggerCreateBody,
  type TriggerPatchBody,
} from './triggers/triggers';
import { SCHEDULE_OPERATIONS } from './schedules/operations';
import {
  createSchedule,
  deleteSchedule,
  getSchedule,
  listFires,
  listTenantSchedules,
  patchSchedule,
  type ScheduleCreateBody,
  type SchedulePatchBody,
} from './schedules/schedules';

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

const validated = <T>(ctx: Context, part: keyof ValidatedState): T =>
  (ctx.state.validated as ValidatedState)[part] as T;
const trackIdOf = (ctx: Context) => validated<{ track_id: string }>(ctx, 'params').track_id;
const workflowIdOf = (ctx: Context) =>
  validated<{ workflow_id: string }>(ctx, 'params').workflow_id;
const nodeRefOf = (ctx: Context) => validated<{ ref: string }>(ctx, 'params').ref;

/** What starts the service's workflows after a submit commits: runs, DAGs, webhook deliveries. */
export interface Starters {
  runs: WorkflowStarter;
  dags: DagStarter;
  deliveries: DeliveryStarter;
  timers: TimerStarter;
}

/** Mounts an operation behind its permission and, for a route that needs more, those `also` named. */
type Route = (op: RunsOperation, handler: Middleware, also?: Permission[]) => void;

/**
 * Every /api/v1 route of the runs half: bearer key, per-tenant rate limit, permission. `mcp`, the
 * MCP endpoint's handler, is mounted at POST /mcp behind the same key and rate limit (no
 * permission: each tool call is a REST request that checks its own).
 */
export function runsRouter(deps: PlatformDeps, starters: Starters, mcp?: Middleware): Router {
  const router = new Router();
  router.use(authenticate(deps.pool));
  router.use(auditRefusals(deps.pool));
  router.use(
    tenantRateLimit(deps.redis, {
      requests: deps.config.runs.rateLimitRequests,
      windowSeconds: deps.config.runs.rateLimitWindowSeconds,
    }),
  );
  /** An operation behind its permission; unknown query parameters refused before validation. */
  const route: Route = (op, handler, also = []) =>
    mount(
      router,
      op,
      [requirePermission(op.permission!, ...also), onlyQuery(...queryKeysOf(op))],
      handler,
    );
  const ops = RUNS_OPERATIONS;

  route(ops.submit, async (ctx) => {
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
      webhook: body.webhook as InlineWebhookBody | undefined,
    };
    ctx.status = 202;
    ctx.body = await submitRun(deps, starters.runs, principalOf(ctx), request);
  });

  route(ops.list, async (ctx) => {
    const q = validated<{ state_filter?: string; tag?: string; limit: number; offset: number }>(
      ctx,
      'query',
    );
    ctx.body = await listTenantRuns(deps, principalOf(ctx).tenantId, {
      states: q.state_filter ? (q.state_filter.split(',') as RunState[]) : null,
      tag: q.tag ?? null,
      limit: q.limit,
      offset: q.offset,
    });
  });
  route(ops.get, async (ctx) => {
    ctx.body = await getRunStatus(deps, principalOf(ctx).tenantId, trackIdOf(ctx));
  });
  route(ops.result, async (ctx) => {
    ctx.body = await getRunResult(deps, principalOf(ctx).tenantId, trackIdOf(ctx));
  });
  for (const op of [ops.pause, ops.resume, ops.stop, ops.kill]) {
    const action = op.operationId.replace(/Run$/, '') as 'pause' | 'resume' | 'stop' | 'kill';
    route(op, async (ctx) => {
      await controlRun(deps, principalOf(ctx), trackIdOf(ctx), action);
      ctx.status = 204;
    });
  }
  route(ops.logs, async (ctx) => {
    const q = validated<{ stream: LogStream; since?: number; limit: number }>(ctx, 'query');
    const { page, source } = await readRunLogs(deps, principalOf(ctx).tenantId, trackIdOf(ctx), {
      stream: q.stream,
      since: q.since ?? null,
      limit: q.limit,
    });
    ctx.set('X-Log-Source', source);
    ctx.body = page;
  });
  route(ops.utilization, async (ctx) => {
    const q = validated<{ from_ts?: string; to_ts?: string }>(ctx, 'query');
    ctx.body = await getUtilization(deps, principalOf(ctx).tenantId, trackIdOf(ctx), {
      from: q.from_ts ?? null,
      to: q.to_ts ?? null,
    });
  });
  route(ops.delete, async (ctx) => {
    await deleteRun(deps, principalOf(ctx), trackIdOf(ctx));
    ctx.status = 204;
  });

  route(ops.quotasGet, async (ctx) => {
    ctx.body = await getQuotas(deps, principalOf(ctx));
  });
  route(ops.quotasPut, async (ctx) => {
    ctx.body = await putQuotas(deps, principalOf(ctx), validated(ctx, 'body'));
  });
  route(ops.usage, async (ctx) => {
    ctx.body = await getUsage(deps, principalOf(ctx));
  });
  route(ops.audit, async (ctx) => {
    ctx.body = await listAuditRecords(deps, principalOf(ctx), validated(ctx, 'query'));
  });
  if (mcp) mount(router, ops.mcp, [onlyQuery()], mcp);
  workflowRoutes(route, deps, starters);
  webhookRoutes(route, deps, starters.deliveries);
  templateRoutes(route, deps, starters.dags);
  timerRoutes(route, deps, starters.timers);
  scheduleRoutes(route, deps);
  triggerRoutes(route, deps);
  return router;
}

/** The DAG workflow routes (dags/): submit, reads, controls. */
function workflowRoutes(route: Route, deps: PlatformDeps, starters: Starters): void {
  const ops = WORKFLOW_OPERATIONS;
  const tenantOf = (ctx: Context) => principalOf(ctx).tenantId;
  route(ops.workflowSubmit, async (ctx) => {
    const body = validated<WorkflowSubmitBody>(ctx, 'body');
    ctx.status = 202;
    ctx.body = await submitWorkflow(deps, starters.dags, principalOf(ctx), body);
  });
  route(ops.workflowList, async (ctx) => {
    const q = validated<{
      state_filter?: string;
      tag?: string;
      template_id?: string;
      limit: number;
      offset: number;
    }>(ctx, 'query');
    ctx.body = await listTenantWorkflows(deps, tenantOf(ctx), {
      states: q.state_filter ? (q.state_filter.split(',') as WorkflowState[]) : null,
      tag: q.tag ?? null,
      templateId: q.template_id ?? null,
      limit: q.limit,
      offset: q.offset,
    });
  });
  route(ops.workflowGet, async (ctx) => {
    ctx.body = await getWorkflowStatus(deps, tenantOf(ctx), workflowIdOf(ctx));
  });
  route(ops.workflowNode, async (ctx) => {
    ctx.body = await getNodeDetail(deps, tenantOf(ctx), workflowIdOf(ctx), nodeRefOf(ctx));
  });
  route(ops.workflowResult, async (ctx) => {
    ctx.body = await getWorkflowResult(deps, tenantOf(ctx), workflowIdOf(ctx));
  });
  route(ops.workflowEvents, async (ctx) => {
    const page = validated<{ since: number; limit: number }>(ctx, 'query');
    ctx.body = await listWorkflowEvents(deps, tenantOf(ctx), workflowIdOf(ctx), page);
  });
  for (const [op, action] of [
    [ops.workflowPause, 'pause'],
    [ops.workflowResume, 'resume'],
    [ops.workflowCancel, 'cancel'],
  ] as const)
    route(op, async (ctx) => {
      ctx.body = await controlWorkflow(deps, principalOf(ctx), workflowIdOf(ctx), action);
    });
  for (const [op, decision] of [
    [ops.workflowNodeApprove, 'approve'],
    [ops.workflowNodeReject, 'reject'],
  ] as const)
    route(op, async (ctx) => {
      const [workflowId, ref] = [workflowIdOf(ctx), nodeRefOf(ctx)];
      ctx.body = await decideGate(deps, principalOf(ctx), workflowId, ref, decision);
    });
  route(ops.workflowNodeRetry, async (ctx) => {
    ctx.body = await retryNode(deps, principalOf(ctx), workflowIdOf(ctx), nodeRefOf(ctx));
  });
}

/**
 * A body a route may go without (its document says `required: false`): absent is `{}`, and what
 * joi refuses is a 422 as for any body.
 */
function optionalBody<T>(ctx: Context, schema: Joi.Schema<T>): T {
  const body = ctx.request.body === undefined ? {} : ctx.request.body;
  const result: Joi.ValidationResult<T> = schema.validate(body, {
    abortEarly: false,
    errors: { wrap: { label: false } },
  });
  if (result.error)
    throw new RequestValidationError(
      result.error.details.map((d) => ({
        location: 'body',
        path: d.path,
        message: d.message,
        type: d.type,
      })),
    );
  return result.value;
}

type DeliveriesQuery = { state_filter?: string; since: number; limit: number };
const deliveryFilterOf = (ctx: Context): DeliveryFilter => {
  const q = validated<DeliveriesQuery>(ctx, 'query');
  return {
    states: q.state_filter ? (q.state_filter.split(',') as DeliveryState[]) : null,
    since: String(q.since),
    limit: q.limit,
  };
};

/** The webhook routes (webhooks/): endpoints, deliveries, and the per-run and per-workflow reads. */
function webhookRoutes(route: Route, deps: PlatformDeps, starter: DeliveryStarter): void {
  const ops = WEBHOOK_OPERATIONS;
  const tenantOf = (ctx: Context) => principalOf(ctx).tenantId;
  const endpointIdOf = (ctx: Context) =>
    validated<{ endpoint_id: string }>(ctx, 'params').endpoint_id;
  const deliveryIdOf = (ctx: Context) =>
    String(validated<{ delivery_id: number }>(ctx, 'params').delivery_id);
  // The delivery routes first: /webhooks/deliveries/{id} also matches /webhooks/{endpoint_id}/...
  route(ops.deliveryGet, async (ctx) => {
    ctx.body = await getDelivery(deps, tenantOf(ctx), deliveryIdOf(ctx));
  });
  route(ops.deliveryRedeliver, async (ctx) => {
    ctx.status = 202;
    ctx.body = await redeliver(deps, starter, principalOf(ctx), deliveryIdOf(ctx));
  });
  route(ops.endpointCreate, async (ctx) => {
    ctx.status = 201;
    ctx.body = await createEndpoint(deps, principalOf(ctx), validated(ctx, 'body'));
  });
  route(ops.endpointList, async (ctx) => {
    ctx.body = await listTenantEndpoints(deps, tenantOf(ctx), validated(ctx, 'query'));
  });
  route(ops.endpointGet, async (ctx) => {
    ctx.body = await getEndpoint(deps, tenantOf(ctx), endpointIdOf(ctx));
  });
  route(ops.endpointPatch, async (ctx) => {
    const patch = validated<EndpointPatch>(ctx, 'body');
    ctx.body = await patchEndpoint(deps, starter, principalOf(ctx), endpointIdOf(ctx), patch);
  });
  route(ops.endpointDelete, async (ctx) => {
    await deleteEndpoint(deps, principalOf(ctx), endpointIdOf(ctx));
    ctx.status = 204;
  });
  route(ops.endpointRotateSecret, async (ctx) => {
    ctx.body = await rotateSecret(deps, principalOf(ctx), endpointIdOf(ctx));
  });
  route(ops.endpointTest, async (ctx) => {
    const endpointId = endpointIdOf(ctx);
    const { event_type } = optionalBody<{ event_type: string }>(ctx, TestRequest);
    ctx.status = 202;
    ctx.body = await sendTestDelivery(deps, starter, principalOf(ctx), endpointId, event_type);
  });
  route(ops.endpointDeliveries, async (ctx) => {
    const filter = deliveryFilterOf(ctx);
    ctx.body = await listEndpointDeliveries(deps, tenantOf(ctx), endpointIdOf(ctx), filter);
  });
  route(ops.runDeliveries, async (ctx) => {
    ctx.body = await listRunDeliveries(deps, tenantOf(ctx), trackIdOf(ctx), deliveryFilterOf(ctx));
  });
  route(ops.workflowDeliveries, async (ctx) => {
    const filter = deliveryFilterOf(ctx);
    ctx.body = await listWorkflowDeliveries(deps, tenantOf(ctx), workflowIdOf(ctx), filter);
  });
}

/** The timer routes (timers/): create, list, read, cancel. */
function timerRoutes(route: Route, deps: PlatformDeps, starter: TimerStarter): void {
  const ops = TIMER_OPERATIONS;
  const timerIdOf = (ctx: Context) => validated<{ timer_id: string }>(ctx, 'params').timer_id;
  route(ops.timerCreate, async (ctx) => {
    const body = validated<TimerCreateBody>(ctx, 'body');
    ctx.status = 201;
    ctx.body = await createTimer(deps, starter, principalOf(ctx), body);
  });
  route(ops.timerList, async (ctx) => {
    const q = validated<{
      state_filter?: string;
      label_filter?: string[];
      limit: number;
      offset: number;
    }>(ctx, 'query');
    ctx.body = await listTenantTimers(deps, principalOf(ctx).tenantId, {
      states: q.state_filter ? (q.state_filter.split(',') as TimerState[]) : null,
      // The value is everything after the first '=' (its schema: a key, '=', a value).
      labels: (q.label_filter ?? []).map((selector) => {
        const at = selector.indexOf('=');
        return [selector.slice(0, at), selector.slice(at + 1)];
      }),
      limit: q.limit,
      offset: q.offset,
    });
  });
  route(ops.timerGet, async (ctx) => {
    ctx.body = await getTimer(deps, principalOf(ctx).tenantId, timerIdOf(ctx));
  });
  route(ops.timerDelete, async (ctx) => {
    await deleteTimer(deps, principalOf(ctx), timerIdOf(ctx));
    ctx.status = 204;
  });
}

/** The template routes (templates/): register, reads, PATCH, DELETE, run. */
function templateRoutes(route: Route, deps: PlatformDeps, dags: DagStarter): void {
  const ops = TEMPLATE_OPERATIONS;
  const tenantOf = (ctx: Context) => principalOf(ctx).tenantId;
  const refOf = (ctx: Context) => validated<{ ref: string }>(ctx, 'params').ref;
  route(ops.templateCreate, async (ctx) => {
    const body = validated<TemplateCreate>(ctx, 'body');
    ctx.status = 201;
    ctx.body = await registerTemplate(deps, principalOf(ctx), body);
  });
  route(ops.templateList, async (ctx) => {
    ctx.body = await listTenantTemplates(deps, tenantOf(ctx), validated(ctx, 'query'));
  });
  route(ops.templateGet, async (ctx) => {
    const { version } = validated<{ version?: number }>(ctx, 'query');
    ctx.body = await getTemplate(deps, tenantOf(ctx), refOf(ctx), version);
  });
  route(ops.templatePatch, async (ctx) => {
    const patch = validated<TemplatePatch>(ctx, 'body');
    ctx.body = await patchTemplate(deps, principalOf(ctx), refOf(ctx), patch);
  });
  route(ops.templateDelete, async (ctx) => {
    await deleteTemplate(deps, principalOf(ctx), refOf(ctx));
    ctx.status = 204;
  });
  route(
    ops.templateRun,
    async (ctx) => {
      const body = validated<TemplateRunBody>(ctx, 'body');
      ctx.status = 202;
      ctx.body = await runTemplate(deps, dags, principalOf(ctx), refOf(ctx), body);
    },
    // The spec: a run needs svc_workflow_submit too (it is a workflow submit).
    ['svc_workflow_submit'],
  );
}

/** The schedule routes (schedules/): create, list, read, change, delete, the fire ledger. */
function scheduleRoutes(route: Route, deps: PlatformDeps): void {
  const ops = SCHEDULE_OPERATIONS;
  const scheduleIdOf = (ctx: Context) =>
    validated<{ schedule_id: string }>(ctx, 'params').schedule_id;
  route(ops.scheduleCreate, async (ctx) => {
    const body = validated<ScheduleCreateBody>(ctx, 'body');
    ctx.status = 201;
    ctx.body = await createSchedule(deps, principalOf(ctx), body);
  });
  route(ops.scheduleList, async (ctx) => {
    const q = validated<{ label_filter?: string[]; limit: number; offset: number }>(ctx, 'query');
    ctx.body = await listTenantSchedules(deps, principalOf(ctx).tenantId, {
      // The value is everything after the first '=' (its schema: a key, '=', a value).
      labels: (q.label_filter ?? []).map((selector) => {
        const at = selector.indexOf('=');
        return [selector.slice(0, at), selector.slice(at + 1)];
      }),
      limit: q.limit,
      offset: q.offset,
    });
  });
  route(ops.scheduleGet, async (ctx) => {
    ctx.body = await getSchedule(deps, principalOf(ctx).tenantId, scheduleIdOf(ctx));
  });
  route(ops.schedulePatch, async (ctx) => {
    const body = validated<SchedulePatchBody>(ctx, 'body');
    ctx.body = await patchSchedule(deps, principalOf(ctx), scheduleIdOf(ctx), body);
  });
  route(ops.scheduleDelete, async (ctx) => {
    await deleteSchedule(deps, principalOf(ctx), scheduleIdOf(ctx));
    ctx.status = 204;
  });
  route(ops.scheduleFires, async (ctx) => {
    const page = validated<{ limit: number; offset: number }>(ctx, 'query');
    ctx.body = await listFires(deps, principalOf(ctx).tenantId, scheduleIdOf(ctx), page);
  });
}

/** The template trigger routes (triggers/): create, list, read, change, delete, the fire ledger. */
function triggerRoutes(route: Route, deps: PlatformDeps): void {
  const ops = TRIGGER_OPERATIONS;
  const triggerIdOf = (ctx: Context) => validated<{ trigger_id: string }>(ctx, 'params').trigger_id;
  const refOf = (ctx: Context) => validated<{ ref: string }>(ctx, 'params').ref;
  const pageOf = (ctx: Context) => validated<{ limit: number; offset: number }>(ctx, 'query');
  route(ops.triggerCreate, async (ctx) => {
    const body = validated<TriggerCreateBody>(ctx, 'body');
    ctx.status = 201;
    ctx.body = await createTrigger(deps, principalOf(ctx), refOf(ctx), body);
  });
  route(ops.templateTriggers, async (ctx) => {
    ctx.body = await listTenantTriggers(deps, principalOf(ctx).tenantId, refOf(ctx), pageOf(ctx));
  });
  route(ops.triggerList, async (ctx) => {
    ctx.body = await listTenantTriggers(deps, principalOf(ctx).tenantId, null, pageOf(ctx));
  });
  route(ops.triggerGet, async (ctx) => {
    ctx.body = await getTrigger(deps, principalOf(ctx).tenantId, triggerIdOf(ctx));
  });
  route(ops.triggerPatch, async (ctx) => {
    const body = validated<TriggerPatchBody>(ctx, 'body');
    ctx.body = await patchTrigger(deps, principalOf(ctx), triggerIdOf(ctx), body);
  });
  route(ops.triggerDelete, async (ctx) => {
    await deleteTrigger(deps, principalOf(ctx), triggerIdOf(ctx));
    ctx.status = 204;
  });
  route(ops.triggerFires, async (ctx) => {
    ctx.body = await listTriggerFires(
      deps,
      principalOf(ctx).tenantId,
      triggerIdOf(ctx),
      pageOf(ctx),
    );
  });
}
