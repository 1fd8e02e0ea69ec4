import { PERMISSIONS } from '../../db/runs/permissions';
import { RUN_STATES } from '../../workflows/runs/definitions';
import { IMAGE_REFERENCE_PATTERN } from './image-reference';
import { NO_NUL_PATTERN } from '../platform/http/text';
import { UTC_INSTANT_PATTERN } from '../platform/instant';
import { jsonSchemaOf } from '../platform/http/json-schema';
import { QUOTA_BODY, TENANT_QUOTAS } from './tenant';

/**
 * The runs service's contract (OpenAPI 3.1), served at GET /openapi.json. It records every
 * decision the spec left "not shown" (see `x-decisions` and the descriptions), and the
 * integration tests validate real responses against its schemas.
 */
const instant = {
  type: 'string',
  format: 'date-time',
  pattern: UTC_INSTANT_PATTERN,
  description:
    'ISO-8601 UTC instant with the Z suffix, on a real calendar date (2020-02-30 and leap seconds are refused); answers carry millisecond precision',
};
const nullableInstant = { type: ['string', 'null'], format: 'date-time' };
const ulid = { type: 'string', pattern: '^[0-9A-HJKMNP-TV-Z]{26}$' };
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown, description = 'OK') => ({
  description,
  content: { 'application/json': { schema } },
});
const error = (description: string) => json(ref('Error'), description);

const errors = {
  '400': error(
    'Malformed JSON, invalid image reference (`invalid_image:<ref>`), `expires_at_in_past`, or an unknown query parameter (the detail names the supported set).',
  ),
  '401': error('Missing or invalid bearer key (`WWW-Authenticate: Bearer`).'),
  '403': error("`permission_denied`, or `image_not_allowed` when the key's tier has an allowlist."),
  '404': error("`run_not_found`: no such run, or not this tenant's."),
  '409': error('Conflict; see the operation.'),
  '422': error('Schema mismatch (joi message), or `invalid_shift_definition: ...`.'),
  '413': error('The body is over 1 MiB (`request body exceeds 1048576 bytes`).'),
  '415': error(
    'A body that is not `application/json` (`request body must be application/json`), on any method that may carry one.',
  ),
  '503': error(
    "`a backend is briefly unreachable; retry` (Postgres or Redis restarting), or for a control `workflow_unavailable` (the run's workflow did not answer within 5 s; the control may still be carried out: read the run before retrying); with Retry-After.",
  ),
  '429': error(
    '`daily_quota_exceeded`, `metered_quota_exceeded` (submit on a metered key at its daily cap) or `rate_limited` (with `Retry-After`).',
  ),
};
/** Every `limit`/`offset`/`since` the routes take: a JSON-safe integer. */
const offsetParam = (name: string) => ({
  name,
  in: 'query',
  schema: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 },
});
/** `state_filter` of GET /runs: one state or a comma-separated list of them (else 422). */
const STATE_LIST = `(${RUN_STATES.join('|')})`;
const stateFilterParam = {
  name: 'state_filter',
  in: 'query',
  schema: { type: 'string', pattern: `^${STATE_LIST}(,${STATE_LIST})*$` },
  description: 'One state or a comma-separated list.',
};
/** An operation's error responses: those named, and 503 (any backend may be restarting). */
const pick = (...codes: (keyof typeof errors)[]) => ({
  ...Object.fromEntries(codes.map((c) => [c, errors[c]])),
  '503': errors['503'],
});
const trackIdParam = { name: 'track_id', in: 'path', required: true, schema: ulid };
const secured = (permission: string) => ({
  security: [{ bearer: [] }],
  'x-permission': permission,
});

const runFields = {
  track_id: ulid,
  tenant_id: { type: 'string' },
  state: { enum: [...RUN_STATES] },
  reason: {
    type: ['string', 'null'],
    description:
      'Why the run reached its terminal state: completed, nonzero_exit, stopped, killed, timeout, expired, queue_timeout, image_pull_failed, start_failed, container_lost; or, set by the reconciler (x-decisions reconcile), workflow_terminated, workflow_failed, workflow_timed_out, workflow_cancelled, workflow_completed, workflow_missing.',
  },
  image: { type: 'string' },
  command: { type: 'array', items: { type: 'string' } },
  env: { type: 'object', additionalProperties: { type: 'string' } },
  submitted_at: instant,
  eligible_start: instant,
  scheduled_start: nullableInstant,
  expires_at: nullableInstant,
  started_at: nullableInstant,
  finished_at: nullableInstant,
  exit_code: { type: ['integer', 'null'] },
  container_id: { type: ['string', 'null'] },
  worker_id: { type: ['string', 'null'] },
  cpu_limit: { type: 'number' },
  memory_limit_mb: { type: 'integer' },
  timeout_seconds: { type: 'integer' },
  clamped: { type: 'boolean' },
  name: { type: ['string', 'null'], maxLength: 128 },
  tags: { type: 'array', items: { type: 'string' } },
  stdout_file: { type: ['string', 'null'] },
  stderr_file: { type: ['string', 'null'] },
};

const schemas = {
  Error: {
    type: 'object',
    required: ['detail'],
    additionalProperties: false,
    properties: { detail: { type: 'string' } },
  },
  SubmitRequest: {
    type: 'object',
    required: ['image'],
    additionalProperties: false,
    description:
      'Unknown fields are refused (422). The inline `webhook` field arrives with the webhooks issue; until then it is an unknown field.',
    properties: {
      image: {
        type: 'string',
        minLength: 1,
        maxLength: 512,
        pattern: IMAGE_REFERENCE_PATTERN,
        description:
          'host[:port]/path with :tag and/or @digest; no implicit Docker Hub or `latest`: the host has a `.` or a port or is `localhost`, host/path is at most 255 characters, and a tag or a digest is given, else 400 `invalid_image:<ref>`.',
      },
      command: {
        type: 'array',
        maxItems: 256,
        items: { type: 'string', maxLength: 8192, pattern: NO_NUL_PATTERN },
        default: [],
      },
      env: {
        type: 'object',
        maxProperties: 256,
        propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]{0,255}$' },
        additionalProperties: { type: 'string', maxLength: 32768, pattern: NO_NUL_PATTERN },
        default: {},
      },
      scheduled_start: {
        ...nullableInstant,
        pattern: UTC_INSTANT_PATTERN,
        description: 'A past instant is clamped to now.',
      },
      expires_at: {
        ...instant,
        description: 'Absolute start deadline; in the past → 400 expires_at_in_past.',
      },
      timeout_seconds: {
        type: ['integer', 'null'],
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        description:
          'null: 600. Any value above the tenant maximum is clamped to it (`clamped: true`), never refused. Counts running time; paused time is not counted.',
      },
      cpu_limit: {
        type: ['number', 'null'],
        minimum: 0.001,
        maximum: Number.MAX_SAFE_INTEGER,
        description:
          'Cores, rounded to 0.001; null: 1. Above the tenant maximum: clamped (`clamped: true`).',
      },
      memory_limit_mb: {
        type: ['integer', 'null'],
        minimum: 6,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'null: 256. Above the tenant maximum: clamped (`clamped: true`).',
      },
      name: { type: ['string', 'null'], minLength: 1, maxLength: 128, pattern: NO_NUL_PATTERN },
      tags: {
        type: 'array',
        maxItems: 32,
        uniqueItems: true,
        items: { type: 'string', minLength: 1, maxLength: 64, pattern: NO_NUL_PATTERN },
        default: [],
      },
    },
  },
  SubmitResponse: {
    type: 'object',
    required: ['track_id', 'status', 'eligible_start', 'clamped'],
    additionalProperties: false,
    properties: {
      track_id: ulid,
      status: { const: 'scheduled' },
      eligible_start: instant,
      clamped: { type: 'boolean' },
    },
  },
  RunEvent: {
    type: 'object',
    required: ['event_id', 'event_type', 'ts', 'from_state', 'to_state', 'reason', 'payload'],
    additionalProperties: false,
    properties: {
      event_id: {
        ...ulid,
        description: 'Stable id of the event (the later webhook envelope event_id).',
      },
      event_type: {
        type: 'string',
        description:
          'run.scheduled, run.queued, run.pulling, run.running, run.paused, run.resumed, run.stopping, run.exited, run.failed, run.timeout, run.killed',
      },
      ts: instant,
      from_state: { enum: [...RUN_STATES, null] },
      to_state: { enum: [...RUN_STATES] },
      reason: { type: ['string', 'null'] },
      payload: { type: 'object' },
    },
  },
  Run: {
    type: 'object',
    required: Object.keys(runFields),
    additionalProperties: false,
    properties: runFields,
  },
  RunStatus: {
    type: 'object',
    required: [...Object.keys(runFields), 'events', 'scheduling_info'],
    additionalProperties: false,
    properties: {
      ...runFields,
      events: { type: 'array', items: ref('RunEvent') },
      scheduling_info: {
        type: 'object',
        required: ['eligible_start', 'working_hours_applied', 'queue_position', 'estimated_start'],
        additionalProperties: false,
        properties: {
          eligible_start: instant,
          working_hours_applied: { type: 'boolean' },
          queue_position: {
            type: ['integer', 'null'],
            minimum: 1,
            description:
              "1-based FIFO position among the tenant's scheduled runs (by eligible_start, track_id); null unless scheduled.",
          },
          estimated_start: {
            ...nullableInstant,
            description:
              "Soft: now (or eligible_start) plus the mean duration of the tenant's last 50 finished runs per full round of slots ahead; null without history or unless scheduled.",
          },
        },
      },
    },
  },
  RunList: {
    type: 'object',
    required: ['runs', 'limit', 'offset'],
    additionalProperties: false,
    properties: {
      runs: { type: 'array', items: ref('Run') },
      limit: { type: 'integer' },
      offset: { type: 'integer' },
    },
  },
  RunResult: {
    type: 'object',
    required: [
      'track_id',
      'exit_code',
      'status',
      'reason',
      'started_at',
      'finished_at',
      'duration_seconds',
      'stdout_bytes',
      'stderr_bytes',
      'stdout_file',
      'stderr_file',
      'result_summary',
    ],
    additionalProperties: false,
    properties: {
      track_id: ulid,
      exit_code: { type: ['integer', 'null'] },
      status: { enum: ['exited', 'failed', 'timeout', 'killed'] },
      reason: { type: ['string', 'null'] },
      started_at: nullableInstant,
      finished_at: instant,
      duration_seconds: {
        type: 'number',
        minimum: 0,
        description: 'finished_at − started_at (0 when never started).',
      },
      stdout_bytes: { type: 'integer' },
      stderr_bytes: { type: 'integer' },
      stdout_file: { type: ['string', 'null'] },
      stderr_file: { type: ['string', 'null'] },
      result_summary: { type: ['string', 'null'], description: 'The last 1 KB of stdout.' },
    },
  },
  LogPage: {
    type: 'object',
    required: ['lines', 'next_since', 'eof'],
    additionalProperties: false,
    properties: {
      lines: { type: 'array', items: { type: 'string' } },
      next_since: { type: 'integer', minimum: 0 },
      eof: { type: 'boolean' },
    },
  },
  Utilization: {
    type: 'object',
    required: ['samples'],
    additionalProperties: false,
    properties: {
      samples: {
        type: 'array',
        items: {
          type: 'object',
          required: [
            'timestamp',
            'cpu_percent',
            'memory_mb',
            'memory_limit_mb',
            'net_rx_bytes',
            'net_tx_bytes',
          ],
          additionalProperties: false,
          properties: {
            timestamp: instant,
            cpu_percent: {
              type: 'number',
              minimum: 0,
              description: '% of one core (Docker CLI formula); 0 while paused.',
            },
            memory_mb: { type: 'number', minimum: 0 },
            memory_limit_mb: { type: 'integer' },
            net_rx_bytes: { type: 'integer' },
            net_tx_bytes: { type: 'integer' },
          },
        },
      },
    },
  },
  TenantQuotas: jsonSchemaOf(TENANT_QUOTAS),
  Usage: {
    type: 'object',
    additionalProperties: false,
    required: ['tier', 'metered', 'limits', 'allowed_images', 'expires_at', 'usage'],
    properties: {
      tier: { type: ['string', 'null'] },
      metered: { type: 'boolean' },
      limits: {
        type: 'object',
        additionalProperties: false,
        required: [
          'memory_limit_mb',
          'cpu_cores',
          'timeout_seconds',
          'concurrent_runs',
          'daily_runs',
          'workflow_nodes',
          'retention_days',
        ],
        properties: Object.fromEntries(
          [
            'memory_limit_mb',
            'cpu_cores',
            'timeout_seconds',
            'concurrent_runs',
            'daily_runs',
            'workflow_nodes',
            'retention_days',
          ].map((k) => [k, { type: 'number' }]),
        ),
        description: "The tenant quotas narrowed by the key's tier.",
      },
      allowed_images: {
        type: ['array', 'null'],
        items: { type: 'string' },
        description: 'Exact references, or prefixes ending in "/", ":" or "@"; null: any image.',
      },
      expires_at: { ...nullableInstant, description: 'When the key expires; null: never.' },
      usage: {
        type: 'array',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['policy', 'used', 'limit', 'remaining', 'resets_at'],
          properties: {
            policy: {
              enum: ['daily_runs', 'concurrent_runs', 'request_rate', 'metered_run_seconds'],
            },
            used: { type: ['integer', 'null'], description: 'null for the request rate policy.' },
            limit: { type: 'integer' },
            remaining: { type: 'integer' },
            resets_at: nullableInstant,
          },
        },
      },
    },
  },
  AuditList: {
    type: 'object',
    additionalProperties: false,
    required: ['records', 'limit', 'offset'],
    properties: {
      records: {
        type: 'array',
        items: {
          type: 'object',
          additionalProperties: false,
          required: [
            'audit_id',
            'tenant_id',
            'ts',
            'actor',
            'action',
            'outcome',
            'target',
            'detail',
          ],
          properties: {
            audit_id: ulid,
            tenant_id: { type: 'string' },
            ts: instant,
            actor: {
              type: 'string',
              description: '"operator" (the runs-admin CLI) or the key_id of the request.',
            },
            action: {
              type: 'string',
              description:
                'e.g. tenant.create, key.create, key.revoke, key.set_tier, tenant.quotas.update, run.submit, run.pause, run.delete, or "<METHOD> <path>" for a permission refusal.',
            },
            outcome: { enum: ['ok', 'refused'] },
            target: { type: ['string', 'null'] },
            detail: { type: 'object' },
          },
        },
      },
      limit: { type: 'integer' },
      offset: { type: 'integer' },
    },
  },
  Health: {
    type: 'object',
    required: ['status', 'database', 'cache', 'container_runtime', 'workers'],
    properties: {
      status: { enum: ['ok', 'degraded'] },
      database: { enum: ['up', 'down'] },
      cache: { enum: ['up', 'down'] },
      container_runtime: { enum: ['up', 'down'] },
      workers: {
        type: 'object',
        required: ['total', 'busy'],
        properties: {
          total: {
            type: ['integer', 'null'],
            description:
              'Docker hosts polling the any-host queue; null when Temporal does not answer within 1 s.',
          },
          busy: { type: ['integer', 'null'], description: 'Runs pulling, running or paused.' },
        },
      },
    },
  },
};

/** Probes and this document need no key (the spec: every endpoint except the probes). */
const publicOperation = { security: [] };
/** Another method on a probe's path (Koa's allowedMethods; `Allow` names the methods). */
const notAllowed = error('Method not allowed (`Allow` names the methods).');

const control = (action: string, conflict: string, extra: string) => ({
  post: {
    operationId: `${action.toLowerCase()}Run`,
    ...secured('svc_run_control'),
    summary: `${action} a run`,
    description: `Decided by the run's workflow (a Temporal update with a validator), so of two racing calls one wins. ${extra}`,
    parameters: [trackIdParam],
    responses: {
      '204': { description: 'Done' },
      ...pick('400', '401', '403', '404', '413', '415'),
      '409': error(`\`${conflict}\` in a wrong state (also for a terminal run).`),
      '429': errors['429'],
    },
  },
});

export const openApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'Container run service (runs)',
    version: '1.0.0',
    license: { name: 'UNLICENSED', identifier: 'UNLICENSED' },
    description:
      'Runs of container images under limits on Docker, driven by one Temporal workflow per run (`run/<track_id>`).',
  },
  'x-decisions': {
    concurrency_slot:
      'A run takes a slot at dispatch (scheduled → queued) and holds it through pulling, running and paused until terminal. A run deferred with scheduled_start does not hold a slot while it waits: the state table (enforced at dispatch) wins over the guidance, so deferred runs never block runs that are due.',
    dispatch:
      "FIFO per tenant by (eligible_start, track_id). A run asks for a slot when it becomes eligible; while it waits, a run of its tenant that gives its slot back signals the longest-waiting runs (as many as there are free slots), so a freed slot is taken within about a second (the spec's 1-second tick), and each waiting run also asks on its own every 30 s in case a signal was lost (after a raise of max_concurrent_runs, for example).",
    image_pull:
      'A run in pulling pulls its image from the registry. Runs of the same reference on the same host share one pull: a pull in flight, or one finished less than 2 s ago, serves them all, so every run still runs the image the registry served at most 2 s before it entered pulling.',
    utilization:
      'Samples are docker stats readings (about one a second) taken while the container runs, from the moment it has run 500 ms: a container that ends sooner has no samples (streaming it cost the engine a stats collection for a reading or none).',
    control_catch_up:
      "The run row can be one workflow task ahead of the run's workflow (its activity has recorded running or paused, the workflow learns it on its next task). A control that the row allows but the workflow refuses is retried for up to 3 s before the 409.",
    image_reference:
      'host[:port]/path with a tag and/or a digest; a first path component without "." or ":" (a Docker Hub namespace) and an implicit latest are refused with 400 invalid_image:<ref>.',
    delete_run:
      'DELETE on a terminal run removes it with its events, samples, log files and log cache (204); usage ledger rows stay. On an active run: 409 not_terminal (stop or kill it first).',
    control_states:
      'pause: running only (409 not_running); resume: paused only (409 not_paused); stop and kill: running or paused (409 not_running). stop = SIGTERM, 10 s grace, SIGKILL; the run ends exited (reason stopped) whatever the exit code. A kill may overtake a stop in its grace period.',
    timeout: 'timeout_seconds counts time spent running; paused time is not counted.',
    rate_limit:
      'Per tenant: RUNS_RATE_LIMIT_REQUESTS (default 2000) requests per window of RUNS_RATE_LIMIT_WINDOW_SECONDS (default 10) that starts with the first request; past it 429 rate_limited with Retry-After.',
    logs: "since/next_since are 0-based line offsets per stream; since omitted tails the last `limit` lines. X-Log-Source: cache (Redis live tail), file (the stream file) or none (nothing captured yet). `both` keeps Docker's arrival order, which does not order one stream against the other.",
    metering:
      'On a metered tier a run is charged its full (clamped) timeout_seconds at submit and refunded the unused running seconds when it ends (usage_ledger, one charge and one refund per run).',
    metered_cap:
      'A metered key whose tier sets metered_seconds_per_day may hold at most that many run seconds charged per UTC day (charges less refunds, as GET /api/v1/usage reports them as metered_run_seconds): a submit whose up-front charge (its clamped timeout_seconds) would pass the cap is refused with 429 metered_quota_exceeded and nothing is written. Refunds of runs that ended give seconds back the same day.',
    validation: 'Body schema errors (unknown fields included) are 422; malformed JSON is 400.',
    reconcile:
      "A run whose workflow execution run/<track_id> was closed outside the run's own logic (an operator terminated, cancelled or reset it in the Web UI or CLI, or it failed or timed out at the Temporal level) is repaired by the Temporal schedule schedule/runs-reconcile (every 2 minutes, at most 50 runs per pass): the run ends failed with the reason workflow_terminated, workflow_failed, workflow_timed_out, workflow_cancelled or workflow_completed (the workflow completed without recording an end) after Temporal has reported it closed for 60 s, or workflow_missing when the execution no longer exists (history deleted) and the row has not changed for 5 minutes; a run whose workflow start is not yet confirmed is left to the start sweeper. The end is an ordinary run.failed event (payload reconciled: true, workflow_status, workflow_run_id, workflow_closed_at); the container is removed on its host, the slot is given back (waiting runs are woken) and a metered charge is refunded for the seconds from started_at to the workflow's close. A run whose workflow is running (also after a reset) is never touched; the change is conditional on the state read, so a workflow or a second reconciler that records the end first wins.",
    worker_free:
      'The state table\'s "slot and worker free": a run takes a slot only while a Docker host of its task-queue prefix is alive (every worker with RUNS_DOCKER_HOST=true refreshes its row every 5 s; 15 s silent is dead). With none alive a due run waits scheduled holding no slot, asks again every 5 s, and max_queue_seconds keeps counting (then failed queue_timeout).',
    working_hours:
      'Applied at submit into eligible_start, and kept with the run: a run still waiting for a slot when its working time ends takes none until the next working instant; max_queue_seconds still counts.',
    clamping:
      'timeout_seconds, cpu_limit and memory_limit_mb above the tenant maximum are clamped to it (clamped: true), however large, up to 2^53-1; cpu_limit is rounded to 0.001 and at least that.',
    audit_refusals:
      'The audit log holds every 400, 403, 409, 413, 415 and 422 of an authenticated request and the first 429 rate_limited of each window, as outcome refused, action the route (run.submit, run.kill, ...), target the run, detail {reason, status, message, ...}. Bodies refused before the key is read (malformed JSON, oversized) name no tenant and are not kept.',
    backends_unreachable:
      'Postgres or Redis briefly out of reach is 503 with Retry-After, never 500; the rate limit fails open while Redis is down. A control whose workflow does not answer within 5 s is 503 workflow_unavailable.',
    reset:
      "The run's row is the truth: an execution reset by an operator (temporal workflow reset, any point) that finds the row moved on ends with the row's outcome, or claims and launches an active run again, finding its container; a container is only ever created for a row in pulling.",
    permissions: PERMISSIONS,
  },
  servers: [{ url: '/' }],
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'UUIDv4 API key' } },
    schemas,
  },
  paths: {
    '/ping': {
      get: {
        operationId: 'ping',
        ...publicOperation,
        summary: 'Liveness',
        responses: {
          '200': json({ type: 'object', properties: { status: { const: 'ok' } } }),
          '405': notAllowed,
        },
      },
    },
    '/health': {
      get: {
        operationId: 'health',
        ...publicOperation,
        summary: 'Backends and Docker workers',
        responses: {
          '200': json(ref('Health')),
          '405': notAllowed,
          '503': json(ref('Health'), 'A backend is down'),
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'metrics',
        ...publicOperation,
        summary: 'Prometheus text; private networks only',
        responses: {
          '200': {
            description: 'metrics',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          '403': error('Not a private address'),
        },
      },
    },
    '/openapi.json': {
      get: {
        operationId: 'openApiDocument',
        ...publicOperation,
        summary: 'This document',
        responses: { '200': json({ type: 'object' }), '405': notAllowed },
      },
    },
    '/api/v1/runs': {
      post: {
        operationId: 'submitRun',
        ...secured('svc_run_submit'),
        summary: 'Submit a run',
        description:
          'Never refused for capacity (runs wait for a slot). max_daily_runs per UTC day → 429 daily_quota_exceeded.',
        requestBody: {
          required: true,
          content: { 'application/json': { schema: ref('SubmitRequest') } },
        },
        responses: {
          '202': json(ref('SubmitResponse'), 'Accepted'),
          ...pick('400', '401', '403', '413', '415', '422', '429'),
        },
      },
      get: {
        operationId: 'listRuns',
        ...secured('svc_run_read'),
        summary: 'List runs, newest first',
        parameters: [
          stateFilterParam,
          {
            name: 'tag',
            in: 'query',
            schema: { type: 'string', minLength: 1, maxLength: 64, pattern: NO_NUL_PATTERN },
          },
          {
            name: 'limit',
            in: 'query',
            schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
          },
          offsetParam('offset'),
        ],
        responses: { '200': json(ref('RunList')), ...pick('400', '401', '403', '422', '429') },
      },
    },
    '/api/v1/runs/{track_id}': {
      get: {
        operationId: 'getRun',
        ...secured('svc_run_read'),
        summary: 'Run status',
        parameters: [trackIdParam],
        responses: { '200': json(ref('RunStatus')), ...pick('400', '401', '403', '404', '429') },
      },
      delete: {
        operationId: 'deleteRun',
        ...secured('svc_run_delete'),
        summary: 'Delete a terminal run',
        parameters: [trackIdParam],
        responses: {
          '204': { description: 'Deleted' },
          ...pick('400', '401', '403', '404', '413', '415', '429'),
          '409': error('`not_terminal`: the run is active.'),
        },
      },
    },
    '/api/v1/runs/{track_id}/result': {
      get: {
        operationId: 'getRunResult',
        ...secured('svc_run_read'),
        summary: 'Run result',
        parameters: [trackIdParam],
        responses: {
          '200': json(ref('RunResult')),
          ...pick('400', '401', '403', '404', '429'),
          '409': error('`not_terminal`'),
        },
      },
    },
    '/api/v1/runs/{track_id}/logs': {
      get: {
        operationId: 'getRunLogs',
        ...secured('svc_run_read'),
        summary: "A page of the run's log",
        parameters: [
          trackIdParam,
          {
            name: 'stream',
            in: 'query',
            schema: { enum: ['stdout', 'stderr', 'both'], default: 'both' },
          },
          {
            ...offsetParam('since'),
            schema: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
          },
          {
            name: 'limit',
            in: 'query',
            schema: { type: 'integer', minimum: 1, maximum: 1000, default: 1000 },
          },
        ],
        responses: {
          '200': {
            ...json(ref('LogPage')),
            headers: { 'X-Log-Source': { schema: { enum: ['cache', 'file', 'none'] } } },
          },
          ...pick('400', '401', '403', '404', '422', '429'),
        },
      },
    },
    '/api/v1/runs/{track_id}/utilization': {
      get: {
        operationId: 'getRunUtilization',
        ...secured('svc_run_read'),
        summary: 'Utilization samples (one per second while running), oldest first, at most 10000',
        parameters: [
          trackIdParam,
          { name: 'from_ts', in: 'query', schema: instant },
          { name: 'to_ts', in: 'query', schema: instant },
        ],
        responses: {
          '200': json(ref('Utilization')),
          ...pick('400', '401', '403', '404', '422', '429'),
        },
      },
    },
    '/api/v1/runs/{track_id}/pause': control(
      'Pause',
      'not_running',
      'docker pause: frozen with memory intact; CPU drops to 0 and logs stop.',
    ),
    '/api/v1/runs/{track_id}/resume': control('Resume', 'not_paused', 'docker unpause.'),
    '/api/v1/runs/{track_id}/stop': control(
      'Stop',
      'not_running',
      'SIGTERM, 10 s grace, then SIGKILL; ends exited (reason stopped).',
    ),
    '/api/v1/runs/{track_id}/kill': control('Kill', 'not_running', 'SIGKILL; ends killed.'),
    '/api/v1/tenant/quotas': {
      get: {
        operationId: 'getTenantQuotas',
        ...secured('svc_run_read'),
        summary: 'Tenant quotas',
        responses: { '200': json(ref('TenantQuotas')), ...pick('400', '401', '403', '429') },
      },
      put: {
        operationId: 'putTenantQuotas',
        ...secured('svc_tenant_admin'),
        summary: 'Update some quotas (partial; at least one field; unknown fields 422)',
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: jsonSchemaOf(QUOTA_BODY),
            },
          },
        },
        responses: {
          '200': json(ref('TenantQuotas')),
          ...pick('400', '401', '403', '413', '415', '422', '429'),
        },
      },
    },
    '/api/v1/usage': {
      get: {
        operationId: 'getUsage',
        ...secured('svc_run_read'),
        summary: "The key's tier, limits and usage",
        responses: { '200': json(ref('Usage')), ...pick('400', '401', '403', '429') },
      },
    },
    '/api/v1/audit': {
      get: {
        operationId: 'listAudit',
        ...secured('svc_run_read'),
        summary: 'Operator actions and refusals against the tenant, newest first',
        parameters: [
          {
            name: 'limit',
            in: 'query',
            schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
          },
          offsetParam('offset'),
        ],
        responses: { '200': json(ref('AuditList')), ...pick('400', '401', '403', '422', '429') },
      },
    },
  },
} as const;
