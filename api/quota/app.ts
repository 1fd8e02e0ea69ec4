import Router from '@koa/router';
import { createApp } from '../platform/http/app';
import { checkAll, postgresCheck, redisCheck } from '../platform/health';
import type { PlatformDeps, ServiceInstance } from '../platform/service';
import { quotaEnvelope } from './envelope';
import { QUOTA_ERRORS } from './errors';

export const QUOTA_BODY_LIMIT_BYTES = 1024 * 1024;
export const QUOTA_JSON_DEPTH_MAX = 64;

export function createQuotaApi(deps: PlatformDeps): ServiceInstance {
  const backends = { database: postgresCheck(deps.pool), cache: redisCheck(deps.redis) };
  const router = new Router();
  // Liveness never touches a backend.
  const alive = (ctx: { body: unknown }) => {
    ctx.body = { status: 'ok' };
  };
  router.get('/healthz', alive);
  router.get('/ping', alive);
  router.get('/readyz', async (ctx) => {
    const statuses = await checkAll(backends);
    const ready = Object.values(statuses).every((s) => s === 'up');
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'unavailable', ...statuses };
  });

  const { app, metrics } = createApp({
    service: 'quota',
    logger: deps.logger,
    envelope: quotaEnvelope,
    errors: QUOTA_ERRORS,
    body: { limitBytes: QUOTA_BODY_LIMIT_BYTES, maxDepth: QUOTA_JSON_DEPTH_MAX },
    routers: [router],
    quietPaths: ['/healthz', '/ping', '/readyz'],
  });
  return {
    name: 'quota',
    app,
    metrics,
    start: () => Promise.resolve(),
    stop: () => Promise.resolve(),
  };
}
