import Joi from 'joi';
import type { OperationContract, ResponseContract } from '../platform/http/contract';
import { boundedText } from '../platform/http/text';
import { JSON_RPC_ERROR, MCP_REQUEST_BODY, mcpTransportResponses } from '../platform/mcp/contract';
import { isUtcInstant, UTC_INSTANT_PATTERN } from '../../platform/instant';
import type { Permission } from '../../db/runs/permissions';
import { RUN_STATES } from '../../db/runs/runs';
import { runsError } from './errors';
import { IMAGE_REFERENCE_MAX_LENGTH, IMAGE_REFERENCE_PATTERN } from './image-reference';
import { LOGS_LIMIT_DEFAULT, LOGS_LIMIT_MAX } from './logs';
import {
  AuditList,
  ErrorBody,
  Health,
  LogPage,
  RunList,
  RunResult,
  RunStatus,
  SelfCheck,
  SubmitResponse,
  TenantQuotas,
  Usage,
  Utilization,
} from './models';
import { QUOTA_BODY } from './tenant';
import { InlineWebhook } from './webhooks/inline';

export const RUN_NAME_MAX_LENGTH = 128;
export const COMMAND_ITEMS_MAX = 256;
export const COMMAND_ITEM_MAX_LENGTH = 8192;
export const ENV_ENTRIES_MAX = 256;
export const ENV_VALUE_MAX_LENGTH = 32768;
export const TAGS_MAX = 32;
export const TAG_MAX_LENGTH = 64;
export const RUNS_LIST_LIMIT_DEFAULT = 100;
export const RUNS_LIST_LIMIT_MAX = 1000;
export const AUDIT_LIMIT_DEFAULT = 100;
export const AUDIT_LIMIT_MAX = 1000;
export const SELF_CHECK_TIMEOUT_SECONDS_MAX = 600;
/**
 * A requested limit above the tenant's maximum is clamped to it (`clamped: true`), however large:
 * the only bound is what a JSON number holds exactly.
 */
export const REQUESTED_LIMIT_MAX = Number.MAX_SAFE_INTEGER;
/** Docker's CPU resolution: a request is rounded to it, so less would round to 0 (no limit). */
export const CPU_LIMIT_MIN = 0.001;

/** ISO-8601 UTC instant that carries the Z suffix (the spec refuses offsets), on a real day. */
export const utcInstant = () =>
  Joi.string()
    .custom((value: string, helpers) =>
      isUtcInstant(value)
        ? value
        : helpers.message({
            custom: '{{#label}} must be an ISO-8601 UTC instant with the Z suffix, on a real date',
          }),
    )
    .meta({ 'x-schema': { format: 'date-time', pattern: UTC_INSTANT_PATTERN } })
    .description(
      'ISO-8601 UTC instant with the Z suffix, on a real calendar date (2020-02-30 and leap seconds are refused)',
    );

/** `limit`, `offset`, `since`: integers a JSON number holds exactly. */
export const offset = () => Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER);
export const pageLimit = (max: number, fallback: number) =>
  Joi.number().integer().min(1).max(max).default(fallback);

/** What a run executes and asks for, one rule each: a run's body and a workflow node share them. */
export const runCommand = () =>
  // An empty argument is an argument (`sh -c ''`, `printf ''`).
  Joi.array()
    .items(boundedText(COMMAND_ITEM_MAX_LENGTH).allow(''))
    .max(COMMAND_ITEMS_MAX)
    .default([]);
export const runEnv = () =>
  Joi.object()
    .pattern(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/, boundedText(ENV_VALUE_MAX_LENGTH).allow(''))
    .max(ENV_ENTRIES_MAX)
    .default({});
export const runTimeoutSeconds = () =>
  Joi.number()
    .integer()
    .min(1)
    .max(REQUESTED_LIMIT_MAX)
    .allow(null)
    .default(null)
    .description(
      'null: 600. Any value above the tenant maximum is clamped to it (`clamped: true`), never refused. Counts running time; paused time is not counted.',
    );
export const runCpuLimit = () =>
  Joi.number()
    .min(CPU_LIMIT_MIN)
    .max(REQUESTED_LIMIT_MAX)
    .allow(null)
    .default(null)
    .description(
      'Cores, rounded to 0.001; null: 1. Above the tenant maximum: clamped (`clamped: true`).',
    );
export const runMemoryLimitMb = () =>
  Joi.number()
    .integer()
    .min(6)
    .max(REQUESTED_LIMIT_MAX)
    .allow(null)
    .default(null)
    .description('null: 256. Above the tenant maximum: clamped (`clamped: true`).');
export const runName = () => boundedText(RUN_NAME_MAX_LENGTH).allow(null);
export const runTags = () =>
  Joi.array().items(boundedText(TAG_MAX_LENGTH).min(1)).max(TAGS_MAX).unique().default([]);
/** A container image reference; its grammar is checked after joi (400 `invalid_image:<ref>`). */
export const imageReference = () =>
  Joi.string()
    .max(IMAGE_REFERENCE_MAX_LENGTH)
    .meta({ 'x-schema': { pattern: IMAGE_REFERENCE_PATTERN } })
    .description(
      'host[:port]/path with :tag and/or @digest; no implicit Docker Hub or `latest`: the host has a `.` or a port or is `localhost`, host/path is at most 255 characters, and a tag or a digest is given, else 400 `invalid_image:<ref>`.',
    );

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

/** `state_filter`: one of `states` or a comma-separated list of them. */
export function stateFilter(states: readonly string[]) {
  const list = `(${states.join('|')})`;
  return Joi.string()
    .pattern(new RegExp(`^${list}(,${list})*$`))
    .message(`state_filter must be one or more of ${states.join(', ')}, comma-separated`)
    .description('One state or a comma-separated list.');
}

/**
 * An id in a path (a ULID), in either case. A 404 for what is not the tenant's must not depend on
 * the id's shape, so an id that is no ULID is answered `notFound` too.
 */
export const ulidParam = (notFound: () => Error) =>
  Joi.string()
    .pattern(/^[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}$/)
    .uppercase()
    .required()
    .error(notFound);

const trackIdParams = Joi.object({ track_id: ulidParam(() => runsError('run_not_found')) });

const SelfCheckRequest = Joi.object({
  image: Joi.string()
    .max(512)
    .required()
    .description("An image of the platform's own registry (else 400 image_not_in_local_registry)."),
  command: Joi.array().items(Joi.string().max(4096)).max(64).default([]),
  timeout_seconds: Joi.number().integer().min(1).max(SELF_CHECK_TIMEOUT_SECONDS_MAX).default(60),
}).id('SelfCheckRequest');

/** What each refusal status of the runs service means, for the operations that can answer it. */
const REFUSALS = {
  '400':
    'Malformed JSON, invalid image reference (`invalid_image:<ref>`), `expires_at_in_past`, or an unknown query parameter (the detail names the supported set).',
  '401': 'Missing or invalid bearer key (`WWW-Authenticate: Bearer`).',
  '403': "`permission_denied`, or `image_not_allowed` when the key's tier has an allowlist.",
  '404': "`run_not_found`: no such run, or not this tenant's.",
  '409': 'Conflict; see the operation.',
  '413': 'The body is over 1 MiB (`request body exceeds 1048576 bytes`).',
  '415':
    'A body that is not `application/json` (`request body must be application/json`), on any method that may carry one.',
  '422': 'Schema mismatch (joi message), or `invalid_shift_definition: ...`.',
  '429':
    '`daily_quota_exceeded`, `metered_quota_exceeded` (submit on a metered key at its daily cap) or `rate_limited` (with `Retry-After`).',
  '503':
    "`a backend is briefly unreachable; retry` (Postgres or Redis restarting), or for a control `workflow_unavailable` (the run's workflow did not answer within 5 s; the control may still be carried out: read the run before retrying); with Retry-After.",
  '405': 'Method not allowed (`Allow` names the methods).',
} as const;
type RefusalStatus = keyof typeof REFUSALS;

const refusal = (description: string): ResponseContract => ({ description, schema: ErrorBody });
/** The error envelope as JSON Schema, for a response that is one of it and another shape. */
const ERROR_BODY_SCHEMA = {
  type: 'object',
  properties: { detail: { type: 'string' } },
  required: ['detail'],
};

export interface RunsOperation extends OperationContract {
  /** The permission a key needs; none: a public probe or an operator route. */
  permission?: Permission;
  /** Refusals beyond those its shape implies, with this operation's own wording where given. */
  refusals?: Partial<Record<RefusalStatus, string | true>>;
}

/** The refusals an operation's shape implies: auth, a body, a query, a run in the path. */
function impliedRefusals(op: RunsOperation): RefusalStatus[] {
  const statuses: RefusalStatus[] = [];
  if (op.permission) statuses.push('400', '401', '403', '429', '503');
  if (op.method !== 'get') statuses.push('413', '415');
  if (op.request?.body || op.request?.query) statuses.push('422');
  if (op.request?.params === trackIdParams) statuses.push('404');
  return statuses;
}

/** An operation with its security, permission and refusals stated in the document. */
export function runsOperation(op: RunsOperation): RunsOperation {
  const own = Object.entries(op.refusals ?? {}) as [RefusalStatus, string | true][];
  const refusals = Object.fromEntries([
    ...impliedRefusals(op).map((status) => [status, refusal(REFUSALS[status])]),
    ...own.map(([status, text]) => [status, refusal(text === true ? REFUSALS[status] : text)]),
  ]) as Record<string, ResponseContract>;
  return {
    ...op,
    extensions: op.permission
      ? { security: [{ bearer: [] }], 'x-permission': op.permission, ...op.extensions }
      : { security: [], ...op.extensions },
    responses: { ...refusals, ...op.responses },
  };
}

/**
 * The operation maker of an area (timers, schedules, triggers): each operation its permission,
 * and the area's refusals under the operation's own.
 */
export const areaOperations =
  (refusals: RunsOperation['refusals']) =>
  (permission: NonNullable<RunsOperation['permission']>) =>
  (op: Omit<RunsOperation, 'permission'>) =>
    runsOperation({ ...op, permission, refusals: { ...refusals, ...op.refusals } });

export const ok = (schema: Joi.Schema, description = 'OK'): ResponseContract => ({
  description,
  schema,
});
export const done = (description: string): ResponseContract => ({ description });

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

/** Every operation of the runs service: what its routes enforce and its document states. */
export const RUNS_OPERATIONS = {
  ping: runsOperation({
    method: 'get',
    path: '/ping',
    operationId: 'ping',
    summary: 'Liveness',
    responses: {
      '200': ok(Joi.object({ status: Joi.string().valid('ok') })),
      '405': refusal(REFUSALS['405']),
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
  mcp: runsOperation({
    method: 'post',
    path: '/mcp',
    operationId: 'mcp',
    summary: 'MCP endpoint: the run, workflow, quota and template operations as tools',
    description:
      "The Model Context Protocol over streamable HTTP, stateless: no session id, each POST one JSON-RPC message or batch answered with JSON (GET and DELETE: 405). The bearer key is checked (and the request counted against the tenant's rate limit) before any MCP handling; no permission is needed to list the tools. A tool is one REST operation called in-process with the caller's key: its route's permission check, validation, service function and error envelope; its arguments are the operation's path parameters, query and body as one object (the input schema is generated from the same joi schemas); its result content is the REST body, exactly; a refusal is a tool error (isError) carrying the REST body ({detail}) and the HTTP status. tools/list and /llms.txt name every tool and the permission it needs.",
    extensions: { security: [{ bearer: [] }], requestBody: MCP_REQUEST_BODY },
    responses: {
      ...mcpTransportResponses(ERROR_BODY_SCHEMA),
      '400': {
        description:
          'Malformed JSON or an unknown query parameter ({detail}), or not a JSON-RPC message (JSON-RPC error -32700 or -32600).',
        schema: { oneOf: [ERROR_BODY_SCHEMA, JSON_RPC_ERROR] },
      },
      '401': refusal(REFUSALS['401']),
      '405': refusal(REFUSALS['405']),
      '413': refusal(REFUSALS['413']),
      '422': refusal('`JSON nesting deeper than <n> levels`: the body nests past the limit.'),
      '429': refusal('`rate_limited` (with `Retry-After`).'),
      '503': refusal(
        'A backend is briefly unreachable (Postgres or Redis restarting), with Retry-After.',
      ),
    },
  }),
  selfCheckStart: runsOperation({
    method: 'post',
    path: '/api/v1/self-checks',
    operationId: 'startSelfCheck',
    summary: 'Start a platform self-check (private networks only)',
    description:
      "An operator's diagnostic: API → workflow self-check/<check_id> → Postgres and a container of the local registry on a worker host. No key; refused 403 to a public address.",
    request: { body: SelfCheckRequest },
    responses: { '202': ok(SelfCheck, 'Started') },
    refusals: {
      '400': '`image_not_in_local_registry`, or malformed JSON.',
      '403': 'Not a private address.',
      '413': true,
      '415': true,
      '422': true,
      '503': '`workflow engine unavailable`: the workflow could not be started; nothing is kept.',
    },
  }),
  selfCheckGet: runsOperation({
    method: 'get',
    path: '/api/v1/self-checks/{check_id}',
    operationId: 'getSelfCheck',
    summary: 'A self-check (private networks only)',
    request: { params: Joi.object({ check_id: Joi.string().required() }) },
    responses: { '200': ok(SelfCheck) },
    refusals: { '403': 'Not a private address.', '404': '`self-check not found`' },
  }),
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
        headers: { 'X-Log-Source': { schema: { enum: ['cache', 'file', 'none'] } } },
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
  quotasGet: runsOperation({
    method: 'get',
    path: '/api/v1/tenant/quotas',
    operationId: 'getTenantQuotas',
    routeName: 'tenant.quotas.get',
    permission: 'svc_run_read',
    summary: 'Tenant quotas',
    responses: { '200': ok(TenantQuotas) },
  }),
  quotasPut: runsOperation({
    method: 'put',
    path: '/api/v1/tenant/quotas',
    operationId: 'putTenantQuotas',
    routeName: 'tenant.quotas.update',
    permission: 'svc_tenant_admin',
    summary: 'Update some quotas (partial; at least one field; unknown fields 422)',
    request: { body: QUOTA_BODY },
    responses: { '200': ok(TenantQuotas) },
  }),
  usage: runsOperation({
    method: 'get',
    path: '/api/v1/usage',
    operationId: 'getUsage',
    routeName: 'usage.get',
    permission: 'svc_run_read',
    summary: "The key's tier, limits and usage",
    responses: { '200': ok(Usage) },
  }),
  audit: runsOperation({
    method: 'get',
    path: '/api/v1/audit',
    operationId: 'listAudit',
    routeName: 'audit.list',
    permission: 'svc_run_read',
    summary: 'Operator actions and refusals against the tenant, newest first',
    request: {
      query: Joi.object({
        limit: pageLimit(AUDIT_LIMIT_MAX, AUDIT_LIMIT_DEFAULT),
        offset: offset().default(0),
      }),
    },
    responses: { '200': ok(AuditList) },
  }),
} satisfies Record<string, RunsOperation>;
