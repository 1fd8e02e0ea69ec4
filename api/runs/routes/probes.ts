import type Router from '@koa/router';
import Joi from 'joi';
import type client from 'prom-client';
import type { PlatformDeps } from '../../../platform/deps';
import {
  checkAll,
  postgresCheck,
  redisCheck,
  withinTimeout,
  type BackendCheck,
} from '../../../db/health';
import { platformVersion } from '../../../db/repository';
import { mount } from '../../http/contract';
import { answerReadiness } from '../../http/readiness';
import { privateNetworkOnly } from '../../http/private-network';
import { Alive, Health, Readiness } from '../../../services/runs/models';
import { workersStatus } from '../../../services/runs/workers';
import { ok, refusal, REFUSALS, runsOperation, type RunsOperation } from './operation';

/** The probes and the documents: anyone may call them (the metrics: private networks only). */
export const PROBE_OPERATIONS = {
  ping: runsOperation({
    method: 'get',
    path: '/ping',
    operationId: 'ping',
    summary: 'Liveness',
    responses: {
      '200': ok(Alive),
      '405': refusal(REFUSALS['405']),
    },
  }),
  readyz: runsOperation({
    method: 'get',
    path: '/readyz',
    operationId: 'readiness',
    summary: 'Readiness: Postgres and Redis answer (what a load balancer or Kubernetes asks)',
    description:
      "The API serves once its own backends answer; unlike /health it does not ask a Docker engine (an API's host may have none: the workers run the containers) nor count the workers.",
    responses: {
      '200': ok(Readiness),
      '405': refusal(REFUSALS['405']),
      '503': ok(Readiness, 'Postgres or Redis is down'),
    },
  }),
  health: runsOperation({
    method: 'get',
    path: '/health',
    operationId: 'health',
    summary: 'Backends and Docker workers',
    responses: {
      '200': ok(Health),
      '405': refusal(REFUSALS['405']),
      '503': ok(Health, 'A backend is down'),
    },
  }),
  metrics: runsOperation({
    method: 'get',
    path: '/metrics',
    operationId: 'metrics',
    summary: 'Prometheus text; private networks only',
    responses: {
      '200': { description: 'metrics', content: { 'text/plain': { schema: { type: 'string' } } } },
      '403': refusal('Not a private address'),
    },
  }),
  openApi: runsOperation({
    method: 'get',
    path: '/openapi.json',
    operationId: 'openApiDocument',
    summary: 'This document',
    responses: { '200': ok(Joi.object().unknown(true)), '405': refusal(REFUSALS['405']) },
  }),
  llms: runsOperation({
    method: 'get',
    path: '/llms.txt',
    operationId: 'agentGuide',
    summary:
      'A concise guide for agents: auth, permissions, run and DAG lifecycles, webhooks, retries, error codes, MCP',
    responses: {
      '200': {
        description: 'the guide',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
      '405': refusal(REFUSALS['405']),
    },
  }),
} satisfies Record<string, RunsOperation>;

/** What the probes answer from: the backends, the app's metrics, the document and the guide. */
export interface ProbeSources {
  metrics?: () => client.Registry;
  /** The OpenAPI document (openapi.ts: built from these operations, so handed in). */
  document: object;
  /** /llms.txt */
  guide: string;
}

export function mountProbeRoutes(router: Router, deps: PlatformDeps, sources: ProbeSources): void {
  const ops = PROBE_OPERATIONS;
  const dockerCheck: BackendCheck = () => withinTimeout(() => deps.docker.ping());
  const backends = {
    database: postgresCheck(deps.pool),
    cache: redisCheck(deps.redis),
    container_runtime: dockerCheck,
  };
  const version = platformVersion();
  mount(router, ops.ping, [], (ctx) => {
    ctx.body = { status: 'ok', version };
  });
  mount(router, ops.readyz, [], (ctx) =>
    answerReadiness(ctx, { database: backends.database, cache: backends.cache }, version),
  );
  mount(router, ops.health, [], async (ctx) => {
    const statuses = await checkAll(backends);
    const healthy = Object.values(statuses).every((s) => s === 'up');
    ctx.status = healthy ? 200 : 503;
    const workers = await workersStatus(deps).catch(() => ({ total: null, busy: null }));
    ctx.body = { status: healthy ? 'ok' : 'degraded', ...statuses, workers, version };
  });
  mount(router, ops.openApi, [], (ctx) => {
    ctx.body = sources.document;
  });
  mount(router, ops.llms, [], (ctx) => {
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = sources.guide;
  });
  mount(router, ops.metrics, [privateNetworkOnly('metrics')], async (ctx) => {
    const registry = sources.metrics?.();
    if (!registry) throw new Error('metrics are served by the app that registered them');
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
}
