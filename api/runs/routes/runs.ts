import type Router from '@koa/router';
import Joi from 'joi';
import type { Context } from 'koa';
import { RUN_STATES, type RunState } from '../../../db/runs/runs';
import { boundedText } from '../../../platform/text';
import { principalOf } from '../auth';
import { controlRun, deleteRun } from '../../../services/runs/control';
import type { LogStream } from '../../../services/runs/log-store';
import { LOGS_LIMIT_DEFAULT, LOGS_LIMIT_MAX, readRunLogs } from '../../../services/runs/logs';
import {
  LogPage,
  RunList,
  RunResult,
  RunStatus,
  SubmitResponse,
  Utilization,
} from '../../../services/runs/models';
import {
  getRunResult,
  getRunStatus,
  getUtilization,
  listTenantRuns,
} from '../../../services/runs/reads';
import {
  imageReference,
  offset,
  pageLimit,
  runCommand,
  runCpuLimit,
  runEnv,
  runMemoryLimitMb,
  runName,
  runTags,
  runTimeoutSeconds,
  RUNS_LIST_LIMIT_DEFAULT,
  RUNS_LIST_LIMIT_MAX,
  stateFilter,
  TAG_MAX_LENGTH,
  utcInstant,
} from '../../../services/runs/schemas';
import { submitRun, type SubmitRequest as RunSubmit } from '../../../services/runs/submit';
import { InlineWebhook, type InlineWebhookBody } from '../../../services/runs/webhooks/inline';
import {
  done,
  mountOperation,
  ok,
  REFUSALS,
  runsOperation,
  trackIdOf,
  trackIdParams,
  validated,
  type RunsDeps,
  type RunsOperation,
  type Starters,
} from './operation';

const SubmitRequest = Joi.object({
  image: imageReference().required(),
  command: runCommand(),
  env: runEnv(),
  scheduled_start: utcInstant()
    .allow(null)
    .default(null)
    .description('A past instant is clamped to now.'),
  expires_at: utcInstant().description(
    'Absolute start deadline; in the past → 400 expires_at_in_past.',
  ),
  timeout_seconds: runTimeoutSeconds(),
  cpu_limit: runCpuLimit(),
  memory_limit_mb: runMemoryLimitMb(),
  name: runName(),
  tags: runTags(),
  webhook: InlineWebhook,
})
  .required()
  .unknown(false)
  .description('Unknown fields are refused (422), in `webhook` too.')
  .id('SubmitRequest');

const control = (action: 'pause' | 'resume' | 'stop' | 'kill', conflict: string, extra: string) =>
  runsOperation({
    method: 'post',
    path: `/api/v1/runs/{track_id}/${action}`,
    operationId: `${action}Run`,
    routeName: `run.${action}`,
    permission: 'svc_run_control',
    summary: `${action[0]!.toUpperCase()}${action.slice(1)} a run`,
    description: `Decided by the run's workflow (a Temporal update with a validator), so of two racing calls one wins. ${extra}`,
    request: { params: trackIdParams },
    responses: { '204': done('Done') },
    refusals: { '409': `\`${conflict}\` in a wrong state (also for a terminal run).` },
  });

/** The runs: submit, reads, log, utilization, controls, delete. */
export const RUN_OPERATIONS = {
  submit: runsOperation({
    method: 'post',
    path: '/api/v1/runs',
    operationId: 'submitRun',
    routeName: 'run.submit',
    permission: 'svc_run_submit',
    summary: 'Submit a run',
    description:
      'Never refused for capacity (runs wait for a slot). max_daily_runs per UTC day → 429 daily_quota_exceeded.',
    request: { body: SubmitRequest },
    responses: { '202': ok(SubmitResponse, 'Accepted') },
    refusals: {
      '400': `${REFUSALS['400']} For an inline webhook: \`invalid_webhook_url\` or \`unknown_event_type\`.`,
      '422': `${REFUSALS['422']} An unknown key in \`webhook\` too.`,
    },
  }),
  list: runsOperation({
    method: 'get',
    path: '/api/v1/runs',
    operationId: 'listRuns',
    routeName: 'run.list',
    permission: 'svc_run_read',
    summary: 'List runs, newest first',
    request: {
      query: Joi.object({
        state_filter: stateFilter(RUN_STATES),
        tag: boundedText(TAG_MAX_LENGTH),
        limit: pageLimit(RUNS_LIST_LIMIT_MAX, RUNS_LIST_LIMIT_DEFAULT),
        offset: offset().default(0),
      }),
    },
    responses: { '200': ok(RunList) },
  }),
  get: runsOperation({
    method: 'get',
    path: '/api/v1/runs/{track_id}',
    operationId: 'getRun',
    routeName: 'run.get',
    permission: 'svc_run_read',
    summary: 'Run status',
    request: { params: trackIdParams },
    responses: { '200': ok(RunStatus) },
  }),
  delete: runsOperation({
    method: 'delete',
    path: '/api/v1/runs/{track_id}',
    operationId: 'deleteRun',
    routeName: 'run.delete',
    permission: 'svc_run_delete',
    summary: 'Delete a terminal run',
    request: { params: trackIdParams },
    responses: { '204': done('Deleted') },
    refusals: { '409': '`not_terminal`: the run is active.' },
  }),
  result: runsOperation({
    method: 'get',
    path: '/api/v1/runs/{track_id}/result',
    operationId: 'getRunResult',
    routeName: 'run.result',
    permission: 'svc_run_read',
    summary: 'Run result',
    request: { params: trackIdParams },
    responses: { '200': ok(RunResult) },
    refusals: { '409': '`not_terminal`' },
  }),
  logs: runsOperation({
    method: 'get',
    path: '/api/v1/runs/{track_id}/logs',
    operationId: 'getRunLogs',
    routeName: 'run.logs',
    permission: 'svc_run_read',
    summary: "A page of the run's log",
    request: {
      params: trackIdParams,
      query: Joi.object({
        stream: Joi.string().valid('stdout', 'stderr', 'both').default('both'),
        since: offset(),
        limit: pageLimit(LOGS_LIMIT_MAX, LOGS_LIMIT_DEFAULT),
      }),
    },
    responses: {
      '200': {
        ...ok(LogPage),
        headers: { 'X-Log-Source': { schema: { enum: ['cache', 'file', 'object', 'none'] } } },
      },
    },
  }),
  utilization: runsOperation({
    method: 'get',
    path: '/api/v1/runs/{track_id}/utilization',
    operationId: 'getRunUtilization',
    routeName: 'run.utilization',
    permission: 'svc_run_read',
    summary: 'Utilization samples (one per second while running), oldest first, at most 10000',
    request: {
      params: trackIdParams,
      query: Joi.object({ from_ts: utcInstant(), to_ts: utcInstant() }),
    },
    responses: { '200': ok(Utilization) },
  }),
  pause: control(
    'pause',
    'not_running',
    'docker pause: frozen with memory intact; CPU drops to 0 and logs stop.',
  ),
  resume: control('resume', 'not_paused', 'docker unpause.'),
  stop: control(
    'stop',
    'not_running',
    'SIGTERM, 10 s grace, then SIGKILL; ends exited (reason stopped).',
  ),
  kill: control('kill', 'not_running', 'SIGKILL; ends killed.'),
} satisfies Record<string, RunsOperation>;

/** A submit's validated body as the service takes it. */
function submitRequestOf(ctx: Context): RunSubmit {
  const body = validated<Record<string, unknown>>(ctx, 'body');
  return {
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
}

export function mountRunRoutes(router: Router, deps: RunsDeps, starters: Starters): void {
  const ops = RUN_OPERATIONS;
  const tenantOf = (ctx: Context) => principalOf(ctx).tenantId;
  mountOperation(router, ops.submit, async (ctx) => {
    const request = submitRequestOf(ctx);
    ctx.status = 202;
    ctx.body = await submitRun(deps, starters.runs, principalOf(ctx), request);
  });
  mountOperation(router, ops.list, async (ctx) => {
    const q = validated<{ state_filter?: string; tag?: string; limit: number; offset: number }>(
      ctx,
      'query',
    );
    ctx.body = await listTenantRuns(deps, tenantOf(ctx), {
      states: q.state_filter ? (q.state_filter.split(',') as RunState[]) : null,
      tag: q.tag ?? null,
      limit: q.limit,
      offset: q.offset,
    });
  });
  mountOperation(router, ops.get, async (ctx) => {
    ctx.body = await getRunStatus(deps, tenantOf(ctx), trackIdOf(ctx));
  });
  mountOperation(router, ops.result, async (ctx) => {
    ctx.body = await getRunResult(deps, tenantOf(ctx), trackIdOf(ctx));
  });
  for (const op of [ops.pause, ops.resume, ops.stop, ops.kill]) {
    const action = op.operationId.replace(/Run$/, '') as 'pause' | 'resume' | 'stop' | 'kill';
    mountOperation(router, op, async (ctx) => {
      await controlRun(deps, principalOf(ctx), trackIdOf(ctx), action);
      ctx.status = 204;
    });
  }
  mountOperation(router, ops.logs, async (ctx) => {
    const q = validated<{ stream: LogStream; since?: number; limit: number }>(ctx, 'query');
    const { page, source } = await readRunLogs(deps, tenantOf(ctx), trackIdOf(ctx), {
      stream: q.stream,
      since: q.since ?? null,
      limit: q.limit,
    });
    ctx.set('X-Log-Source', source);
    ctx.body = page;
  });
  mountOperation(router, ops.utilization, async (ctx) => {
    const q = validated<{ from_ts?: string; to_ts?: string }>(ctx, 'query');
    ctx.body = await getUtilization(deps, tenantOf(ctx), trackIdOf(ctx), {
      from: q.from_ts ?? null,
      to: q.to_ts ?? null,
    });
  });
  mountOperation(router, ops.delete, async (ctx) => {
    await deleteRun(deps, principalOf(ctx), trackIdOf(ctx));
    ctx.status = 204;
  });
}
