import { Stream } from 'node:stream';
import type Router from '@koa/router';
import type Koa from 'koa';
import type { Context, Next } from 'koa';
import { stringifyExact } from '../../platform/exact-json';
import type client from 'prom-client';
import { mount } from '../http/contract';
import { privateNetworkOnly } from '../http/private-network';
import { createApp } from '../http/app';
import type { ServiceInstance } from '../service';
import type { PlatformDeps } from '../../platform/deps';
import { createAlertDeliveryStarter } from '../../services/quota/alerts/delivery-starter';
import { createCatalogueCache } from '../../services/quota/catalogue-cache';
import { createStrictBatchers } from '../../services/quota/consumption/in-one-statement';
import { quotaEnvelope } from './envelope';
import { QUOTA_ERRORS } from '../../services/quota/errors';
import { createLastUseRecorder } from '../../services/quota/last-use';
import { LLMS_TXT } from './llms';
import { quotaMcpEndpoint } from './mcp';
import { openApiDocument } from './openapi';
import { quotaRouter, type QuotaRouteDeps } from './routes';
import { mountOperation } from './routes/operation';
import { PROBE_OPERATIONS } from './routes/probes';
import { ensureJobSchedules } from '../../services/quota/jobs';
import { createBootstrapStarter } from '../../services/quota/tenants';
import { CODEC_PATH } from './routes/temporal-codec';
import { CODEC_BODY_LIMIT_BYTES } from '../http/codec-endpoint';

export const QUOTA_BODY_LIMIT_BYTES = 1024 * 1024;
export const QUOTA_JSON_DEPTH_MAX = 64;

/** Answers are written with exact integers (a counter can pass 2^53): see exact-json.ts. */
async function exactJsonBodies(ctx: Context, next: Next): Promise<void> {
  await next();
  const body: unknown = ctx.body;
  if (body === null || typeof body !== 'object' || Buffer.isBuffer(body) || body instanceof Stream)
    return;
  const status = ctx.status;
  ctx.body = stringifyExact(body);
  ctx.type = 'application/json';
  ctx.status = status;
}

/**
 * Every route of the service: its operations and the documents that describe them. `app` is the
 * app the MCP endpoint's tools call (their REST routes, in-process).
 */
export function quotaRoutes(
  deps: QuotaRouteDeps,
  metrics?: () => client.Registry,
  app?: () => Koa,
): Router {
  const router = quotaRouter(deps);
  mount(router, PROBE_OPERATIONS.metrics, [privateNetworkOnly('metrics')], async (ctx) => {
    const registry = metrics?.();
    if (!registry) throw new Error('metrics are served by the app that registered them');
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  mountOperation(router, deps, PROBE_OPERATIONS.openapi, (ctx) => {
    ctx.body = openApiDocument;
  });
  mountOperation(router, deps, PROBE_OPERATIONS.llms, (ctx) => {
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = LLMS_TXT;
  });
  let listener: ReturnType<Koa['callback']> | undefined;
  const mcp = quotaMcpEndpoint(() => {
    const served = app?.();
    if (!served) throw new Error('the MCP tools call the app that mounted them');
    return (listener ??= served.callback());
  });
  mountOperation(router, deps, PROBE_OPERATIONS.mcp, mcp);
  return router;
}

export function createQuotaApi(deps: PlatformDeps): ServiceInstance {
  const lastUse = createLastUseRecorder(deps);
  const bootstraps = createBootstrapStarter(deps);
  const catalogues = createCatalogueCache(deps);
  const alertDeliveries = createAlertDeliveryStarter(deps);
  const strictBatchers = createStrictBatchers(deps.pool);
  const router = quotaRoutes(
    { ...deps, lastUse, bootstraps, catalogues, strictBatchers, startedAtMs: Date.now() },
    () => metrics,
    () => app,
  );

  const { app, metrics } = createApp({
    edge: [exactJsonBodies],
    service: 'quota',
    trustedProxies: deps.config.trustedProxies,
    logger: deps.logger,
    envelope: quotaEnvelope,
    errors: QUOTA_ERRORS,
    body: {
      limitBytes: QUOTA_BODY_LIMIT_BYTES,
      maxDepth: QUOTA_JSON_DEPTH_MAX,
      largerLimits: [{ pathPrefix: `${CODEC_PATH}/`, limitBytes: CODEC_BODY_LIMIT_BYTES }],
    },
    routers: [router],
    quietPaths: ['/healthz', '/ping', '/readyz', '/metrics', '/healthz/jobs'],
  });
  return {
    name: 'quota',
    app,
    metrics,
    start: async () => {
      lastUse.start();
      bootstraps.start();
      alertDeliveries.start();
      if (deps.config.quota.jobSchedules) await ensureJobSchedules(deps);
    },
    stop: async () => {
      await alertDeliveries.stop();
      await bootstraps.stop();
      await lastUse.stop();
      // Strict decisions still in flight finish on the pool before it is closed.
      await strictBatchers.drain();
    },
  };
}
