import {
  errorFactory,
  PLATFORM_ERRORS,
  PRIVATE_NETWORK_ONLY,
  type ErrorCatalogue,
  type ErrorDefinition,
} from '../../platform/errors';

const refusal = (status: number, message: string, retryable = false): ErrorDefinition => ({
  status,
  message,
  retryable,
});

/**
 * The runs service's error codes (the spec's, lower case) and the platform's. The envelope's
 * `detail` is the message, which is the code itself unless a thrower adds to it
 * (`invalid_image:<ref>`, `invalid_shift_definition: line 1 ...`).
 */
export const RUNS_ERRORS = {
  ...PLATFORM_ERRORS,
  unauthorized: refusal(401, 'missing or invalid bearer token'),
  permission_denied: refusal(403, 'permission_denied'),
  // The platform's refusal of /metrics and the self-checks to a public caller.
  forbidden: PRIVATE_NETWORK_ONLY,
  rate_limited: refusal(429, 'rate_limited', true),
  unknown_query_parameter: refusal(400, 'unknown query parameter'),
  run_not_found: refusal(404, 'run_not_found'),
  not_found: refusal(404, 'not found'),
  invalid_image: refusal(400, 'invalid_image'),
  image_not_allowed: refusal(403, 'image_not_allowed'),
  expires_at_in_past: refusal(400, 'expires_at_in_past'),
  daily_quota_exceeded: refusal(429, 'daily_quota_exceeded', true),
  metered_quota_exceeded: refusal(429, 'metered_quota_exceeded', true),
  // A metered key's run seconds are kept by the quota service, which did not answer: nothing
  // was stored (an unmetered key is not affected).
  metering_unavailable: refusal(503, 'metering_unavailable', true),
  invalid_shift_definition: refusal(422, 'invalid_shift_definition'),
  not_terminal: refusal(409, 'not_terminal'),
  // A control in a wrong state: the run's workflow answers which (its validators).
  not_running: refusal(409, 'not_running'),
  not_paused: refusal(409, 'not_paused'),
  control_failed: refusal(409, 'control_failed'),
  conflict: refusal(409, 'conflict'),
  workflow_unavailable: refusal(503, 'workflow_unavailable', true),
  image_not_in_local_registry: refusal(400, 'image_not_in_local_registry'),
  workflow_engine_unavailable: refusal(503, 'workflow engine unavailable', true),
  // DAG workflows (the spec's workflow codes); the 409s of a control are the DAG workflow's
  // refusals (DAG_REFUSALS), answered as it gives them.
  workflow_not_found: refusal(404, 'workflow_not_found'),
  node_not_found: refusal(404, 'node_not_found'),
  invalid_graph: refusal(400, 'invalid_graph'),
  too_many_nodes: refusal(400, 'too_many_nodes'),
  workflow_quota_exceeded: refusal(429, 'workflow_quota_exceeded', true),
  not_pausable: refusal(409, 'not_pausable'),
  already_terminal: refusal(409, 'already_terminal'),
  node_not_terminal: refusal(409, 'node_not_terminal'),
  not_an_approval_node: refusal(409, 'not_an_approval_node'),
  not_awaiting_approval: refusal(409, 'not_awaiting_approval'),
  // Webhooks (the spec's webhook codes, and the refusals of its routes the spec leaves unnamed).
  invalid_webhook_url: refusal(400, 'invalid_webhook_url'),
  unknown_event_type: refusal(400, 'unknown_event_type'),
  // Not retryable as such: a slot is freed by deleting an endpoint or raising the quota.
  webhook_quota_exceeded: refusal(429, 'webhook_quota_exceeded'),
  webhook_not_found: refusal(404, 'webhook_not_found'),
  delivery_not_found: refusal(404, 'delivery_not_found'),
  event_type_not_subscribed: refusal(422, 'event_type_not_subscribed'),
  endpoint_disabled: refusal(409, 'endpoint_disabled'),
  delivery_not_terminal: refusal(409, 'delivery_not_terminal'),
  endpoint_deleted: refusal(409, 'endpoint_deleted'),
  // Timers (their codes are the spec's "not shown": decided in x-decisions timers).
  timer_not_found: refusal(404, 'timer_not_found'),
  timer_already_fired: refusal(409, 'timer_already_fired'),
  // Not retryable as such: a slot is freed when a timer fires or is deleted, or by the quota.
  timer_quota_exceeded: refusal(429, 'timer_quota_exceeded'),
  payload_too_large: refusal(422, 'payload_too_large'),
  // Schedules (codes decided in x-decisions schedules).
  schedule_not_found: refusal(404, 'schedule_not_found'),
  invalid_cron: refusal(422, 'invalid_cron'),
  invalid_timezone: refusal(422, 'invalid_timezone'),
  // Not retryable as such: a slot is freed by disabling or deleting a schedule, or by the quota.
  schedule_quota_exceeded: refusal(429, 'schedule_quota_exceeded'),
  // Temporal refused or was unreachable: nothing was kept (create) or changed (PATCH).
  schedule_unavailable: refusal(503, 'schedule_unavailable', true),
  // Templates (the spec leaves their codes "not shown": decided in x-decisions templates_*). A
  // parameter's code carries its name (`unknown_template_param:<name>`), never its value.
  template_not_found: refusal(404, 'template_not_found'),
  template_version_not_found: refusal(404, 'template_version_not_found'),
  template_name_taken: refusal(409, 'template_name_taken'),
  template_version_limit: refusal(409, 'template_version_limit'),
  // Not retryable as such: a slot is freed by deleting a template or raising the quota.
  template_quota_exceeded: refusal(429, 'template_quota_exceeded'),
  template_too_large: refusal(422, 'template_too_large'),
  invalid_template_definition: refusal(422, 'invalid_template_definition'),
  unknown_template_param: refusal(422, 'unknown_template_param'),
  missing_template_param: refusal(422, 'missing_template_param'),
  invalid_template_param: refusal(422, 'invalid_template_param'),
  secret_param_outside_env: refusal(422, 'secret_param_outside_env'),
  // Template triggers (codes decided in x-decisions triggers).
  trigger_not_found: refusal(404, 'trigger_not_found'),
  // Not retryable as such: a slot is freed by disabling or deleting a trigger, or by the quota.
  trigger_quota_exceeded: refusal(429, 'trigger_quota_exceeded'),
  // RUNS_SECRETS_KEY is not configured: a run with secret parameters cannot keep them.
  secrets_unavailable: refusal(503, 'secrets_unavailable'),
} as const satisfies ErrorCatalogue;

export type RunsErrorCode = keyof typeof RUNS_ERRORS;
export const runsError = errorFactory<RunsErrorCode>(RUNS_ERRORS);

/** What a refusal adds to its audit record (api/runs/refusals.ts) beyond its code: a route's own details, if any. */
export interface RefusalDetail {
  /** False for a refusal not worth a row of its own (a rate limit's repeats within a window). */
  audit?: boolean;
  [field: string]: unknown;
}
