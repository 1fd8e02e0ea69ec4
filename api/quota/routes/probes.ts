import type Router from '@koa/router';
import Joi from 'joi';
import { takeTransactionId } from '../../../db/probes';
import { platformVersion } from '../../../db/repository';
import { redisCheck, withinTimeout } from '../../../db/health';
import { releaseVersionField } from '../../../platform/release';
import { answerReadiness } from '../../http/readiness';
import { isBackendUnreachable } from '../../../db/unreachable';
import { flushLagSeconds } from '../../../services/quota/consumption/ledger-flush';
import { JSON_RPC_ERROR, MCP_REQUEST_BODY, mcpTransportResponses } from '../../mcp/contract';
import { HTTP_VALIDATION_ERROR, mountOperation, operation, type QuotaRouteDeps } from './operation';

const CODE_ERROR = {
  type: 'object',
  properties: { detail: { type: 'string' } },
  required: ['detail'],
};

const statusMap = Joi.object({
  version: releaseVersionField().required(),
})
  .pattern(/^/, Joi.string())
  .id('Probe');
const WorkerHealth = Joi.object({
  status: Joi.string().valid('ok', 'lagging'),
  oldest_wait_seconds: Joi.number().min(0).allow(null).description('null: Redis did not answer'),
  budget_seconds: Joi.number().integer().min(1),
})
  .prefs({ presence: 'required' })
  .id('WorkerHealth');

export const PROBE_OPERATIONS = {
  healthz: operation({
    method: 'get',
    path: '/healthz',
    operationId: 'healthz',
    summary: 'Liveness: never touches a backend',
    tags: ['operations'],
    access: 'public',
    responses: { '200': { description: 'alive', schema: statusMap } },
  }),
  ping: operation({
    method: 'get',
    path: '/ping',
    operationId: 'ping',
    summary: 'Liveness, as /healthz',
    tags: ['operations'],
    access: 'public',
    responses: { '200': { description: 'alive', schema: statusMap } },
  }),
  readyz: operation({
    method: 'get',
    path: '/readyz',
    operationId: 'readyz',
    summary: 'Readiness: Redis answers and a database commit goes through',
    tags: ['operations'],
    access: 'public',
    responses: {
      '200': { description: 'ready', schema: statusMap },
      '503': { description: 'a backend is down (named with `down`)', schema: statusMap },
    },
  }),
  worker: operation({
    method: 'get',
    path: '/healthz/worker',
    operationId: 'workerHealth',
    summary:
      "Fast mode's ledger pipeline: 503 once an entry has waited QUOTA_FLUSH_BUDGET_SECONDS (default 300) to be flushed into Postgres",
    description:
      'Fast-mode decisions append their ledger entries to a Redis stream before they answer; the ledger-flush job (every 10 s) moves them into the consumption ledger. oldest_wait_seconds is how long the oldest entry still in the stream has waited (0: none waits). 503 also when Redis does not answer (the wait cannot be read).',
    tags: ['operations'],
    access: 'public',
    responses: {
      '200': { description: 'flushed within the budget', schema: WorkerHealth },
      '503': {
        description: 'an entry waited past the budget, or Redis is down',
        schema: WorkerHealth,
      },
    },
  }),
  metrics: operation({
    method: 'get',
    path: '/metrics',
    operationId: 'metrics',
    summary: 'Prometheus metrics (loopback and private networks only)',
    tags: ['operations'],
    access: 'public',
    responses: {
      '200': { description: 'metrics', content: { 'text/plain': { schema: { type: 'string' } } } },
    },
    refusals: { 403: ['forbidden'] },
  }),
  openapi: operation({
    method: 'get',
    path: '/openapi.json',
    operationId: 'openApiDocument',
    summary: 'This document',
    tags: ['operations'],
    access: 'public',
    responses: { '200': { description: 'the OpenAPI 3.1 document', schema: { type: 'object' } } },
  }),
  llms: operation({
    method: 'get',
    path: '/llms.txt',
    operationId: 'agentGuide',
    summary: 'A concise guide for agents: auth, scopes, idempotency, retries, error codes',
    tags: ['operations'],
    access: 'public',
    responses: {
      '200': {
        description: 'the guide',
        content: { 'text/plain': { schema: { type: 'string' } } },
      },
    },
  }),
  mcp: operation({
    method: 'post',
    path: '/mcp',
    operationId: 'mcp',
    summary: 'MCP endpoint: the quota operations as tools (served at /mcp/ too)',
    description:
      "The Model Context Protocol over streamable HTTP, stateless: no session id, each POST one JSON-RPC message or batch answered with JSON (GET and DELETE: 405, as a stateless server answers). The key is checked before any MCP handling. Tools (tools/list, and /llms.txt): consume, check, refund, reserve, commit_reservation, release_reservation, get_reservation, subject usage, entitlements, assignment and overrides, ledger and usage summary, catalogue and alert event reads. A tool is one REST operation called in-process with the caller's key (its scope, constraints, validation and service function): its arguments are the operation's path parameters, query and body as one object (the input schema is generated from the same joi schemas); its result content is the REST body, exactly; a refusal is a tool error (isError) with the REST error body and the HTTP status. tools/list lists every tool whatever the key's scopes.",
    tags: ['agents'],
    access: 'tenant',
    extensions: { requestBody: MCP_REQUEST_BODY },
    responses: {
      ...mcpTransportResponses(CODE_ERROR),
      '400': {
        description: 'not a JSON-RPC message (JSON-RPC error -32700 or -32600)',
        schema: JSON_RPC_ERROR,
      },
      '422': {
        description: 'the body is not JSON (type json_invalid)',
        schema: HTTP_VALIDATION_ERROR,
      },
    },
  }),
} as const;

/** Liveness and readiness. */
export function mountProbeRoutes(router: Router, deps: QuotaRouteDeps): void {
  // A transaction that takes a transaction id commits a WAL record and waits for its flush: a
  // stalled commit path (a full disk, a hung synchronous replica) reads as down, where a plain
  // SELECT would still answer.
  const commits = () => withinTimeout(() => deps.pool.transaction((tx) => takeTransactionId(tx)));
  const backends = { database: commits, cache: redisCheck(deps.redis) };
  const version = platformVersion();
  const alive: Parameters<typeof mountOperation>[3] = (ctx) => {
    ctx.body = { status: 'ok', version };
  };
  mountOperation(router, deps, PROBE_OPERATIONS.healthz, alive);
  mountOperation(router, deps, PROBE_OPERATIONS.ping, alive);
  mountOperation(router, deps, PROBE_OPERATIONS.readyz, (ctx) =>
    answerReadiness(ctx, backends, version),
  );
  mountOperation(router, deps, PROBE_OPERATIONS.worker, async (ctx) => {
    const budget = deps.config.quota.flushBudgetSeconds;
    const lag = await flushLagSeconds(deps.redis).catch((error: unknown) => {
      if (isBackendUnreachable(error)) return null;
      throw error;
    });
    const healthy = lag !== null && lag < budget;
    ctx.status = healthy ? 200 : 503;
    ctx.body = {
      status: healthy ? 'ok' : 'lagging',
      oldest_wait_seconds: lag,
      budget_seconds: budget,
    };
  });
}
