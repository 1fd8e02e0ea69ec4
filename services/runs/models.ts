import Joi from 'joi';
import { releaseVersionField } from '../../platform/release';
import { RUN_STATES } from '../../db/runs/runs';
import { TIER_LIMIT_FIELDS } from '../../db/runs/tenants';
import { UTC_INSTANT_PATTERN } from '../../platform/instant';
import { TENANT_QUOTAS } from './tenant';

/**
 * The response models of the runs service as joi schemas named for the OpenAPI document's
 * components (contract.ts converts them). Every field is present unless marked optional.
 */
export const model = (name: string, keys: Joi.PartialSchemaMap) =>
  Joi.object(keys).prefs({ presence: 'required' }).id(name);

/** What the service answers as an instant: UTC with Z, millisecond precision. */
export const instant = () =>
  Joi.string()
    .isoDate()
    .meta({ 'x-schema': { format: 'date-time', pattern: UTC_INSTANT_PATTERN } })
    .description(
      'ISO-8601 UTC instant with the Z suffix, on a real calendar date (2020-02-30 and leap seconds are refused); answers carry millisecond precision',
    );
export const nullableInstant = () =>
  Joi.string()
    .isoDate()
    .allow(null)
    .meta({ 'x-schema': { format: 'date-time' } });
export const ulid = () => Joi.string().pattern(/^[0-9A-HJKMNP-TV-Z]{26}$/);
export const nullableText = () => Joi.string().allow('', null);
export const text = () => Joi.string().allow('');
export const integer = () => Joi.number().integer();

export const ErrorBody = Joi.object({
  detail: Joi.string().required().description('the error code, or a message naming it'),
}).id('Error');

export const SubmitResponse = model('SubmitResponse', {
  track_id: ulid(),
  status: Joi.string().valid('scheduled'),
  eligible_start: instant(),
  clamped: Joi.boolean(),
});

const runFields = {
  track_id: ulid(),
  tenant_id: text(),
  state: Joi.string().valid(...RUN_STATES),
  reason: nullableText().description(
    'Why the run reached its terminal state: completed, nonzero_exit, stopped, killed, timeout, expired, queue_timeout, image_pull_failed, start_failed, container_lost, host_lost (its Docker host silent past the reconciler grace); or, set by the reconciler (x-decisions reconcile), workflow_terminated, workflow_failed, workflow_timed_out, workflow_cancelled, workflow_completed, workflow_missing.',
  ),
  image: text(),
  command: Joi.array().items(text()),
  env: Joi.object().pattern(/^/, text()),
  submitted_at: instant(),
  eligible_start: instant(),
  scheduled_start: nullableInstant(),
  expires_at: nullableInstant(),
  started_at: nullableInstant(),
  finished_at: nullableInstant(),
  exit_code: integer().allow(null),
  container_id: nullableText(),
  worker_id: nullableText(),
  cpu_limit: Joi.number(),
  memory_limit_mb: integer(),
  timeout_seconds: integer(),
  clamped: Joi.boolean(),
  name: Joi.string().allow('', null).max(128),
  tags: Joi.array().items(text()),
  stdout_file: nullableText(),
  stderr_file: nullableText(),
  workflow_id: ulid()
    .allow(null)
    .description(
      'The workflow whose node this run is (one run per attempt); null for a plain run.',
    ),
  node_ref: nullableText().description("The node's ref in that workflow; null for a plain run."),
};

export const RunEvent = model('RunEvent', {
  event_id: ulid().description('Stable id of the event (the later webhook envelope event_id).'),
  event_type: text().description(
    'run.scheduled, run.queued, run.pulling, run.running, run.paused, run.resumed, run.stopping, run.exited, run.failed, run.timeout, run.killed',
  ),
  ts: instant(),
  from_state: Joi.string()
    .valid(...RUN_STATES)
    .allow(null),
  to_state: Joi.string().valid(...RUN_STATES),
  reason: nullableText(),
  payload: Joi.object().unknown(true),
});

export const Run = model('Run', runFields);

export const RunStatus = model('RunStatus', {
  ...runFields,
  events: Joi.array().items(RunEvent),
  scheduling_info: Joi.object({
    eligible_start: instant(),
    working_hours_applied: Joi.boolean(),
    queue_position: integer()
      .min(1)
      .allow(null)
      .description(
        "1-based FIFO position among the tenant's scheduled runs (by eligible_start, track_id); null unless scheduled.",
      ),
    estimated_start: nullableInstant().description(
      "Soft: now (or eligible_start) plus the mean duration of the tenant's last 50 finished runs per full round of slots ahead; null without history or unless scheduled.",
    ),
  }),
});

export const RunList = model('RunList', {
  runs: Joi.array().items(Run),
  limit: integer(),
  offset: integer(),
});

export const RunResult = model('RunResult', {
  track_id: ulid(),
  exit_code: integer().allow(null),
  status: Joi.string().valid('exited', 'failed', 'timeout', 'killed'),
  reason: nullableText(),
  started_at: nullableInstant(),
  finished_at: instant(),
  duration_seconds: Joi.number()
    .min(0)
    .description('finished_at − started_at (0 when never started).'),
  stdout_bytes: integer(),
  stderr_bytes: integer(),
  stdout_file: nullableText(),
  stderr_file: nullableText(),
  result_summary: nullableText().description('The last 1 KB of stdout.'),
});

export const LogPage = model('LogPage', {
  lines: Joi.array().items(text()),
  next_since: integer().min(0),
  eof: Joi.boolean(),
});

export const Utilization = model('Utilization', {
  samples: Joi.array().items(
    Joi.object({
      timestamp: instant(),
      cpu_percent: Joi.number()
        .min(0)
        .description('% of one core (Docker CLI formula); 0 while paused.'),
      memory_mb: Joi.number().min(0),
      memory_limit_mb: integer(),
      net_rx_bytes: integer(),
      net_tx_bytes: integer(),
    }),
  ),
});

export const TenantQuotas = TENANT_QUOTAS.id('TenantQuotas');

/** The tier's limits but its metered cap, which the usage list reports as a policy instead. */
const USAGE_LIMITS = TIER_LIMIT_FIELDS.filter((field) => field !== 'metered_seconds_per_day');

export const Usage = model('Usage', {
  tier: nullableText(),
  metered: Joi.boolean(),
  limits: Joi.object(Object.fromEntries(USAGE_LIMITS.map((k) => [k, Joi.number()]))).description(
    "The tenant quotas narrowed by the key's tier.",
  ),
  allowed_images: Joi.array()
    .items(text())
    .allow(null)
    .description('Exact references, or prefixes ending in "/", ":" or "@"; null: any image.'),
  expires_at: nullableInstant().description('When the key expires; null: never.'),
  usage: Joi.array().items(
    Joi.object({
      policy: Joi.string().valid(
        'daily_runs',
        'concurrent_runs',
        'request_rate',
        'metered_run_seconds',
      ),
      used: integer().allow(null).description('null for the request rate policy.'),
      limit: integer(),
      remaining: integer(),
      resets_at: nullableInstant(),
    }),
  ),
});

export const AuditList = model('AuditList', {
  records: Joi.array().items(
    Joi.object({
      audit_id: ulid(),
      tenant_id: text(),
      ts: instant(),
      actor: text().description('"operator" (the runs-admin CLI) or the key_id of the request.'),
      action: text().description(
        'e.g. tenant.create, key.create, key.revoke, key.set_tier, tenant.quotas.update, run.submit, run.pause, run.delete, or "<METHOD> <path>" for a permission refusal.',
      ),
      outcome: Joi.string().valid('ok', 'refused'),
      target: nullableText(),
      detail: Joi.object().unknown(true),
    }),
  ),
  limit: integer(),
  offset: integer(),
});

const up = () => Joi.string().valid('up', 'down');
export const Alive = model('Alive', {
  status: Joi.string().valid('ok'),
  version: releaseVersionField(),
});
export const Health = model('Health', {
  status: Joi.string().valid('ok', 'degraded'),
  database: up(),
  cache: up(),
  container_runtime: up(),
  workers: Joi.object({
    total: integer()
      .allow(null)
      .description(
        'Docker hosts polling the any-host queue; null when Temporal does not answer within 1 s.',
      ),
    busy: integer().allow(null).description('Runs pulling, running or paused.'),
  }),
  version: releaseVersionField(),
});

export const Readiness = model('Readiness', {
  status: Joi.string().valid('ready', 'unavailable'),
  database: up(),
  cache: up(),
  version: releaseVersionField(),
});

export const SelfCheck = model('SelfCheck', {
  check_id: ulid(),
  workflow_id: Joi.string().description('self-check/<check_id> in Temporal'),
  state: Joi.string().valid('scheduled', 'running', 'succeeded', 'failed'),
  image: text(),
  command: Joi.array().items(text()),
  worker_id: nullableText(),
  exit_code: integer().allow(null),
  timed_out: Joi.boolean(),
  stdout: nullableText(),
  stderr: nullableText(),
  error: nullableText(),
  created_at: instant(),
  started_at: nullableInstant(),
  finished_at: nullableInstant(),
});
