import Router from '@koa/router';
import type Koa from 'koa';
import type client from 'prom-client';
import { createApp } from '../platform/http/app';
import type { ValidatedState } from '../platform/http/validate';
import { mount } from '../platform/http/contract';
import { RUNS_OPERATIONS } from './operations';
import { privateNetworkOnly } from '../platform/http/private-network';
import {
  checkAll,
  postgresCheck,
  redisCheck,
  withinTimeout,
  type BackendCheck,
} from '../../platform/health';
import type { ServiceInstance } from '../platform/service';
import type { PlatformDeps } from '../../platform/deps';
import { runsEnvelope } from './envelope';
import { RUNS_ERRORS } from './errors';
import { runsRouter, type Starters } from './routes';
import { workersStatus } from './workers';
import { ensureRetentionSchedule } from './retention';
import { ensureReconcileSchedule } from './reconcile';
import { openApiDocument } from './openapi';
import { LLMS_TXT } from './llms';
import { runsMcpEndpoint } from './mcp';
import { createWorkflowStarter } from './workflow-starter';
import { createDagStarter } from './dags/starter';
import { createDeliveryStarter } from './webhooks/starter';
import { createEventPublisher } from './webhooks/publisher';
import { createTimerStarter } from './timers/starter';
import { getSelfCheck, startSelfCheck, type SelfCheckRequest } from './self-checks';
import { selfCheckWorkflowId } from '../../workflows/runs/self-check-definitions';

export const RUNS_BODY_LIMIT_BYTES = 1024 * 1024;
export const RUNS_JSON_DEPTH_MAX = 64;

/**
 * Every route of the runs service: probes, the documents, the operator's self-checks, the tenant
 * API and its MCP endpoint. `app` is the app the MCP tools call (their REST routes, in-process).
 */
export function runsRoutes(
  deps: PlatformDeps,
  starters: Starters,
  metrics?: () => client.Registry,
  app?: () => Koa,
): Router[] {
  const dockerCheck: BackendCheck = () => withinTimeout(() => deps.docker.ping());
  const backends = {
    database: postgresCheck(deps.pool),
    cache: redisCheck(deps.redis),
    container_runtime: dockerCheck,
  };
  const router = new Router();

  const ops = RUNS_OPERATIONS;
  mount(router, ops.ping, [], (ctx) => {
    ctx.body = { status: 'ok' };
  });
  mount(router, ops.health, [], async (ctx) => {
    const statuses = await checkAll(backends);
    const healthy = Object.values(statuses).every((s) => s === 'up');
    ctx.status = healthy ? 200 : 503;
    const workers = await workersStatus(deps).catch(() => ({ total: null, busy: null }));
    ctx.body = { status: healthy ? 'ok' : 'degraded', ...statuses, workers };
  });
  mount(router, ops.openApi, [], (ctx) => {
    ctx.body = openApiDocument;
  });
  mount(router, ops.llms, [], (ctx) => {
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = LLMS_TXT;
  });
  mount(router, ops.metrics, [privateNetworkOnly('metrics')], async (ctx) => {
    const registry = metrics?.();
    if (!registry) throw new Error('metrics are served by the app that registered them');
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });

  // Self-checks run a container on a worker host: an operator diagnostic, not a tenant API.
  const operatorOnly = privateNetworkOnly('self-checks');
  mount(router, ops.selfCheckStart, [operatorOnly], async (ctx) => {
    const body = (ctx.state.validated as ValidatedState).body as {
      image: string;
      command: string[];
      timeout_seconds: number;
    };
    const request: SelfCheckRequest = {
      image: body.image,
      command: body.command,
      timeoutSeconds: body.timeout_seconds,
    };
    ctx.status = 202;
    ctx.body = presentSelfCheck(await startSelfCheck(deps, request));
  });
  mount(router, ops.selfCheckGet, [operatorOnly], async (ctx) => {
    const { check_id } = (ctx.state.validated as ValidatedState).params as { check_id: string };
    ctx.body = presentSelfCheck(await getSelfCheck(deps, check_id));
  });
  let listener: ReturnType<Koa['callback']> | undefined;
  const mcp = runsMcpEndpoint(() => {
    const served = app?.();
    if (!served) throw new Error('the MCP tools call the app that mounted them');
    return (listener ??= served.callback());
  });
  return [router, runsRouter(deps, starters, mcp)];
}

export function createRunsApi(deps: PlatformDeps): ServiceInstance {
  const starters: Starters = {
    runs: createWorkflowStarter(deps),
    dags: createDagStarter(deps),
    deliveries: createDeliveryStarter(deps),
    timers: createTimerStarter(deps),
  };
  const publisher = createEventPublisher(deps, starters.deliveries);
  const { app, metrics } = createApp({
    service: 'runs',
    logger: deps.logger,
    envelope: runsEnvelope,
    errors: RUNS_ERRORS,
    body: { limitBytes: RUNS_BODY_LIMIT_BYTES, maxDepth: RUNS_JSON_DEPTH_MAX },
    routers: runsRoutes(
      deps,
      starters,
      () => metrics,
      () => app,
    ),
    quietPaths: ['/ping', '/health', '/metrics', '/openapi.json', '/llms.txt'],
  });
  return {
    name: 'runs',
    app,
    metrics,
    // Not awaited: the API serves (and answers its probes) while Temporal is still coming up.
    start: () => {
      // One switch for the service's background schedules (the config is the platform's):
      // tests that do not exercise them turn both off.
      if (deps.config.runs.retentionSchedule) {
        void ensureRetentionSchedule(deps);
        void ensureReconcileSchedule(deps);
      }
      starters.runs.start();
      starters.dags.start();
      starters.deliveries.start();
      starters.timers.start();
      publisher.start();
      return Promise.resolve();
    },
    stop: async () => {
      await publisher.stop();
      await Promise.all([
        starters.runs.stop(),
        starters.dags.stop(),
        starters.deliveries.stop(),
        starters.timers.stop(),
      ]);
    },
  };
}

function presentSelfCheck(row: Awaited<ReturnType<typeof getSelfCheck>>) {
  return { ...row, workflow_id: selfCheckWorkflowId(row.check_id) };
}
