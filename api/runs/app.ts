import Router from '@koa/router';
import Joi from 'joi';
import { createApp } from '../platform/http/app';
import { validate, type ValidatedState } from '../platform/http/validate';
import { privateNetworkOnly } from '../platform/http/private-network';
import {
  checkAll,
  postgresCheck,
  redisCheck,
  withinTimeout,
  type BackendCheck,
} from '../platform/health';
import type { PlatformDeps, ServiceInstance } from '../platform/service';
import { runsEnvelope } from './envelope';
import { RUNS_ERRORS } from './errors';
import { runsRouter } from './routes';
import { workersStatus } from './workers';
import { ensureRetentionSchedule } from './retention';
import { ensureReconcileSchedule } from './reconcile';
import { openApiDocument } from './openapi';
import { createWorkflowStarter } from './workflow-starter';
import { getSelfCheck, startSelfCheck, type SelfCheckRequest } from './self-checks';
import { selfCheckWorkflowId } from '../../workflows/runs/self-check';

export const RUNS_BODY_LIMIT_BYTES = 1024 * 1024;
export const RUNS_JSON_DEPTH_MAX = 64;
export const SELF_CHECK_TIMEOUT_SECONDS_MAX = 600;

const selfCheckBody = Joi.object({
  image: Joi.string().max(512).required(),
  command: Joi.array().items(Joi.string().max(4096)).max(64).default([]),
  timeout_seconds: Joi.number().integer().min(1).max(SELF_CHECK_TIMEOUT_SECONDS_MAX).default(60),
});

export function createRunsApi(deps: PlatformDeps): ServiceInstance {
  const dockerCheck: BackendCheck = () => withinTimeout(() => deps.docker.ping());
  const backends = {
    database: postgresCheck(deps.pool),
    cache: redisCheck(deps.redis),
    container_runtime: dockerCheck,
  };
  const router = new Router();
  const starter = createWorkflowStarter(deps);

  router.get('/ping', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/health', async (ctx) => {
    const statuses = await checkAll(backends);
    const healthy = Object.values(statuses).every((s) => s === 'up');
    ctx.status = healthy ? 200 : 503;
    const workers = await workersStatus(deps).catch(() => ({ total: null, busy: null }));
    ctx.body = { status: healthy ? 'ok' : 'degraded', ...statuses, workers };
  });
  router.get('/openapi.json', (ctx) => {
    ctx.body = openApiDocument;
  });
  router.get('/metrics', privateNetworkOnly('metrics'), async (ctx) => {
    ctx.type = metrics.contentType;
    ctx.body = await metrics.metrics();
  });

  // Self-checks run a container on a worker host: an operator diagnostic, not a tenant API.
  const operatorOnly = privateNetworkOnly('self-checks');
  router.post(
    '/api/v1/self-checks',
    operatorOnly,
    validate({ body: selfCheckBody }),
    async (ctx) => {
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
    },
  );
  router.get('/api/v1/self-checks/:checkId', operatorOnly, async (ctx) => {
    ctx.body = presentSelfCheck(await getSelfCheck(deps, ctx.params.checkId!));
  });

  const { app, metrics } = createApp({
    service: 'runs',
    logger: deps.logger,
    envelope: runsEnvelope,
    errors: RUNS_ERRORS,
    body: { limitBytes: RUNS_BODY_LIMIT_BYTES, maxDepth: RUNS_JSON_DEPTH_MAX },
    routers: [router, runsRouter(deps, starter)],
    quietPaths: ['/ping', '/health', '/metrics', '/openapi.json'],
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
      starter.start();
      return Promise.resolve();
    },
    stop: () => starter.stop(),
  };
}

function presentSelfCheck(row: Awaited<ReturnType<typeof getSelfCheck>>) {
  return { ...row, workflow_id: selfCheckWorkflowId(row.check_id) };
}
