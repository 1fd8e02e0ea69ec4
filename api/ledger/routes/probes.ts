import type Router from '@koa/router';
import type client from 'prom-client';
import { platformVersion } from '../../../db/repository';
import { mount, type JsonSchema } from '../../http/contract';
import { privateNetworkOnly } from '../../http/private-network';
import { LLMS_TXT } from '../llms';
import { Alive, Health, Unhealthy } from '../models';
import { errorResponse, json, operation } from './operation';

export const PROBE_OPERATIONS = {
  health: operation({
    method: 'get',
    path: '/healthz',
    summary: 'Health',
    role: null,
    ok: ['200', "up; auth_client_credential reports the key store (the ledger's own database)"],
    description:
      "auth_client_credential says whether the key store (the ledger's own database, reached with the service's own database credential) accepts that credential: ok (200); rejected (503, every keyed request gets 503 AUTHZ_CREDENTIAL_REJECTED); unknown (503 when the database is unreachable, 200 before the first check). Never rate limited; makes no network call of its own (reads what a background monitor last saw, every second). Also answers HEAD.",
    responses: {
      '200': json('up (auth_client_credential ok), or not yet checked (unknown)', Health),
      '405': errorResponse('METHOD_NOT_ALLOWED (GET and HEAD only)'),
      '503': json(
        "the database refuses the service's own credential (auth_client_credential rejected) or is unreachable (unknown)",
        Unhealthy,
      ),
    },
  }),
  ping: operation({
    method: 'get',
    path: '/ping',
    summary: 'Ping',
    role: null,
    ok: ['200', 'the process is alive'],
    description:
      'Liveness: 200 while the process serves HTTP, whatever its backends say (a database blip must not restart every replica; /healthz is the readiness). Touches no backend, never rate limited, not metered, needs no key. Also answers HEAD.',
    responses: {
      '200': json('the process is alive', Alive),
      '405': errorResponse('METHOD_NOT_ALLOWED (GET and HEAD only)'),
    },
  }),
  openapi: operation({
    method: 'get',
    path: '/openapi.json',
    summary: 'OpenAPI document',
    role: null,
    ok: ['200', 'this document'],
    responses: {
      '200': { description: 'this document', schema: { type: 'object' } },
      '429': errorResponse('RATE_LIMITED'),
    },
  }),
  metrics: operation({
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics; private networks only',
    role: null,
    ok: ['200', 'Prometheus text'],
    description:
      'For operators: request durations by route and status, and ledger_postings_total{path, outcome} (path one_statement: a key seen before in the process, posted with its check and claim in one statement; general: key lookup and claim first).',
    responses: {
      '200': {
        description: 'Prometheus text',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
      '403': errorResponse('FORBIDDEN: not a private network address'),
      '429': errorResponse('RATE_LIMITED'),
    },
  }),
  llms: operation({
    method: 'get',
    path: '/llms.txt',
    summary: 'Agent guide',
    role: null,
    ok: ['200', 'a concise text guide'],
    responses: {
      '200': {
        description: 'a concise text guide',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
      '429': errorResponse('RATE_LIMITED'),
    },
  }),
};

/** What the probes answer from: the service's health, its document and its metrics registry. */
export interface ProbeRouteDeps {
  /** /healthz's status and body, from what the backend monitor last saw. */
  health: () => { status: number; body: object };
  /** The OpenAPI document (openapi.ts, built from these operations: passed in, not imported). */
  document: JsonSchema;
  /** The app's registry, once the app exists. */
  metrics: () => client.Registry;
}

/** Health, the document, metrics and the agent guide: no key, no metering. */
export function mountProbeRoutes(router: Router, deps: ProbeRouteDeps): void {
  const version = platformVersion();
  mount(router, PROBE_OPERATIONS.health, [], (ctx) => {
    const health = deps.health();
    ctx.status = health.status;
    ctx.body = { ...health.body, version };
  });
  mount(router, PROBE_OPERATIONS.ping, [], (ctx) => {
    ctx.body = { status: 'ok', version };
  });
  mount(router, PROBE_OPERATIONS.openapi, [], (ctx) => {
    ctx.body = deps.document;
  });
  mount(
    router,
    PROBE_OPERATIONS.metrics,
    [privateNetworkOnly('metrics', 'FORBIDDEN')],
    async (ctx) => {
      const registry = deps.metrics();
      ctx.type = registry.contentType;
      ctx.body = await registry.metrics();
    },
  );
  mount(router, PROBE_OPERATIONS.llms, [], (ctx) => {
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = LLMS_TXT;
  });
}
