import Router from '@koa/router';
import type Koa from 'koa';
import type client from 'prom-client';
import { createApp } from '../http/app';
import type { ServiceInstance } from '../service';
import type { PlatformDeps } from '../../platform/deps';
import { runsEnvelope } from './envelope';
import { RUNS_ERRORS } from '../../services/runs/errors';
import { runsRouter, type RunsDeps, type Starters } from './routes';
import { mountProbeRoutes } from './routes/probes';
import { mountSelfCheckRoutes } from './routes/self-checks';
import { ensureRetentionSchedule } from '../../services/runs/retention';
import { ensureReconcileSchedule } from '../../services/runs/reconcile';
import { openApiDocument } from './openapi';
import { LLMS_TXT } from './llms';
import { runsMcpEndpoint } from './mcp';
import { createWorkflowStarter } from '../../services/runs/workflow-starter';
import { createDagStarter } from '../../services/runs/dags/starter';
import { createDeliveryStarter } from '../../services/runs/webhooks/starter';
import { createEventPublisher } from '../../services/runs/webhooks/publisher';
import { createTimerStarter } from '../../services/runs/timers/starter';
import { createRunsMeteringIfOn } from '../../services/runs/metering';
import { createLogObjectsIfOn } from '../../services/runs/log-objects';

export const RUNS_BODY_LIMIT_BYTES = 1024 * 1024;
export const RUNS_JSON_DEPTH_MAX = 64;

/**
 * Every route of the runs service: probes, the documents, the operator's self-checks, the tenant
 * API and its MCP endpoint. `app` is the app the MCP tools call (their REST routes, in-process).
 */
export function runsRoutes(
  deps: RunsDeps,
  starters: Starters,
  metrics?: () => client.Registry,
  app?: () => Koa,
): Router[] {
  const router = new Router();
  mountProbeRoutes(router, deps, { metrics, document: openApiDocument, guide: LLMS_TXT });
  mountSelfCheckRoutes(router, deps);
  let listener: ReturnType<Koa['callback']> | undefined;
  const mcp = runsMcpEndpoint(() => {
    const served = app?.();
    if (!served) throw new Error('the MCP tools call the app that mounted them');
    return (listener ??= served.callback());
  });
  return [router, runsRouter(deps, starters, mcp)];
}

/** Said once at start when a metered key's runs cannot be charged: metering is not configured. */
export function logMeteringOff(deps: Pick<PlatformDeps, 'config' | 'logger'>): void {
  if (deps.config.runs.metering === null)
    deps.logger.warn(
      "runs: metering is off (QUOTA_URL or RUNS_QUOTA_KEY unset): metered keys' runs are not charged",
    );
}

export function createRunsApi(platform: PlatformDeps): ServiceInstance {
  // The process's one metering client and log object store, for every route that uses them.
  const deps: RunsDeps = {
    ...platform,
    metering: createRunsMeteringIfOn(platform.config.runs.metering),
    logObjects: createLogObjectsIfOn(platform.config.runs.logObjects),
  };
  const starters: Starters = {
    runs: createWorkflowStarter(deps),
    dags: createDagStarter(deps),
    deliveries: createDeliveryStarter(deps),
    timers: createTimerStarter(deps),
  };
  const publisher = createEventPublisher(deps, starters.deliveries);
  const { app, metrics } = createApp({
    service: 'runs',
    trustedProxies: deps.config.trustedProxies,
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
    quietPaths: ['/ping', '/readyz', '/health', '/metrics', '/openapi.json', '/llms.txt'],
  });
  return {
    name: 'runs',
    app,
    metrics,
    // Not awaited: the API serves (and answers its probes) while Temporal is still coming up.
    start: () => {
      logMeteringOff(deps);
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
