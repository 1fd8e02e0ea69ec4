import { PERMISSIONS } from '../../db/runs/permissions';
import { OPENAPI_LICENSE, openApiPaths, type JsonSchema } from '../http/contract';
import { RUNS_OPERATIONS } from './routes';
import { TEMPLATE_DECISIONS } from './decisions/templates';
import {
  TIMER_HORIZON_DAYS,
  TIMERS_LIST_LIMIT_DEFAULT,
  TIMERS_LIST_LIMIT_MAX,
} from './routes/timers';
import {
  LABEL_KEY_PATTERN,
  LABEL_VALUE_MAX_LENGTH,
  LABELS_MAX,
  PAYLOAD_MAX_BYTES,
} from '../../services/runs/payloads';
import { RECOVER_LIMIT_MAX } from './routes/webhooks';
import { TRIGGER_DECISIONS } from './decisions/triggers';
import { SCHEDULE_DECISIONS } from './decisions/schedules';

/** Every operation of the service, in the document's order (routes/index.ts). */
export const SERVICE_OPERATIONS = Object.values(RUNS_OPERATIONS);

/** What the spec leaves "not shown" of the webhook routes, as decided. */
const WEBHOOK_DECISIONS = {
  webhook_endpoints:
    "POST /api/v1/webhooks answers 201 with the endpoint and its secret, once; list (oldest first, limit default 100, max 1000, offset) and get never carry it. max_webhook_endpoints counts the tenant's endpoints not deleted (inline webhooks are not counted): at it, 429 webhook_quota_exceeded; counted and inserted under a lock on the tenant's quota row. description: up to 1024 characters or null. A deleted endpoint, an inline webhook's subscription and another tenant's endpoint are 404 webhook_not_found, whatever the id's shape.",
  webhook_url:
    'Absolute https (the scheme in any case) with a host, no userinfo, no whitespace or control character, parseable by the WHATWG URL parser (a port in range), else 400 invalid_webhook_url; at most 2048 characters (422 past it). Stored and answered as given. Private and loopback targets are judged by the delivery engine at attempt time (egress rules), not here.',
  webhook_events:
    'events: 1 to 64 distinct entries (422 otherwise), each an event type, an alias (run.terminal, workflow.terminal), a wildcard (run.*, workflow.*, node.*, *) or a notice (webhook.endpoint_degraded, tenant.delivery_dead, timer.fired, schedule.fired), else 400 unknown_event_type. url is checked before events.',
  webhook_secret:
    'Without a secret one is generated: 32 random bytes as 64 hex characters, secret_origin generated (the key is the 32 bytes). A supplied secret is 1 to 256 characters of any kind but U+0000, kept verbatim (secret_origin supplied; the key is its UTF-8 bytes). PATCH may supply a new one (answered once, in that response); rotate-secret always generates one.',
  webhook_patch: `A partial merge of url, events, description, active and secret; at least one field (422 for {}). active true re-enables: disabled_reason null, consecutive_failures 0 (dead_deliveries_total and last_dead_delivery_at are never cleared), and every delivery held while it was disabled is released in the same transaction, however old: pending, sent in ascending delivery_id order. active false disables it with disabled_reason disabled_by_tenant (one already disabled keeps its reason). runs.md does not say what becomes of events while an endpoint is inactive: each becomes a held delivery, never sent and never dropped, until the endpoint is re-enabled (released) or deleted (cancelled).`,
  webhook_delete:
    '204; the endpoint lists and matches no more and frees its quota slot. In the same transaction its held, pending and retrying deliveries are cancelled (state cancelled, finished_at set); one delivering finds it deleted before its next attempt. Its deliveries stay readable by id; its per-endpoint list is 404 like the endpoint.',
  webhook_test:
    'Optional body {event_type}, default webhook.test; any other must be a concrete event type (422 schema mismatch otherwise) that the endpoint subscribes to (an entry, alias or wildcard of its events matching it), else 422 event_type_not_subscribed. A disabled endpoint is 409 endpoint_disabled (a test checks the endpoint as it is now). 202 {delivery_id, event_type}: a pending delivery with test true, a fresh event_id, the envelope {event_id, event_type, occurred_at, tenant_id, resource: {type: webhook, id: endpoint_id}, data: {}, test: true, truncated: false} (each attempt adds its delivery block); started at once.',
  webhook_deliveries:
    "A delivery answers {delivery_id (a JSON integer), endpoint_id (null for an inline webhook), inline, event_id, event_type, track_id, workflow_id, state, attempts, next_attempt_at, last_status_code, last_error, test, truncated, redelivery_of, created_at, updated_at, finished_at}; the single read adds attempt_log [{attempt, started_at, finished_at, status_code, error, outcome}]. States: held (its endpoint is disabled), pending, delivering, retrying (waiting for its next attempt), delivered, dead, cancelled (its endpoint was deleted). Lists (per endpoint, per run, per workflow) answer {deliveries} in ascending delivery_id: state_filter (comma-separated states), since (a delivery_id, exclusive, default 0), limit (default 100, max 1000); unknown query parameters are 400. Per run: every delivery of that run's events, its inline webhook's included; per workflow: of its own, its nodes' and their runs' events. 404 run_not_found, workflow_not_found, webhook_not_found or delivery_not_found for what is not the tenant's.",
  webhook_redeliver:
    'Only from a terminal delivery (delivered, dead, cancelled), else 409 delivery_not_terminal; its endpoint must not be deleted, else 409 endpoint_deleted. A new delivery row with the same endpoint, event_id, event_type, envelope, run and workflow and redelivery_of the original: pending and started at once, or held while the endpoint is disabled. 202 {delivery_id, state}.',
  webhook_recover: `POST /api/v1/webhooks/{endpoint_id}/recover {since, until?, limit?} (what Svix calls recover): every event of the endpoint whose first delivery was made in [since, until) (until default now, and later than since, else 422) and that it never received (each of its deliveries dead; none delivered, held or under way) is sent again as one new delivery (same event_id and envelope, redelivery_of the newest dead one), pending, in the order of the events. limit 1..${RECOVER_LIMIT_MAX} (default ${RECOVER_LIMIT_MAX}) events per call: 202 {recovered, first_delivery_id, last_delivery_id, more}; with more true the same call again takes the next ones (those just re-sent are under way or delivered, so nothing is sent twice by a repeat). Test deliveries are not recovered. A disabled endpoint is 409 endpoint_disabled (re-enabling releases its held deliveries in order). The endpoint row is locked until the commit: two recovers never re-send one event twice.`,
  webhook_inline:
    "The webhook field of POST /api/v1/runs and POST /api/v1/workflows: {url, events, secret?} under the same rules as an endpoint's (400 invalid_webhook_url, 400 unknown_event_type, checked after the images), unknown keys 422. Stored with the run or workflow in the same statement or transaction (nothing half-written), as a subscription scoped to it (secret_origin supplied, or none with a null secret: deliveries unsigned). It is not counted against max_webhook_endpoints, not listed as an endpoint, and cannot be changed; its deliveries show endpoint_id null and inline true.",
  webhook_audit:
    'Each change is in the audit log as webhook.create, webhook.update, webhook.delete, webhook.rotate_secret, webhook.test, webhook.redeliver, webhook.recover (target the endpoint), never with a secret.',
};

/** What the spec leaves "not shown" of timers, as decided. */
const TIMER_DECISIONS = {
  timers: `POST /api/v1/timers {fire_at, payload?, labels?, webhook?} answers 201 the timer {timer_id, state: pending, fire_at, payload, labels, created_at, fired_at: null, cancelled_at: null, fire_delay_seconds: null}. fire_at: a UTC instant with Z (422 otherwise), kept to the millisecond, at most ${TIMER_HORIZON_DAYS} days (ten years) ahead (422); a past one fires at once and its fire_delay_seconds counts from fire_at (so it tells how late it was asked for). payload: any JSON value (default null), at most ${PAYLOAD_MAX_BYTES} bytes as compact UTF-8 JSON (422 payload_too_large), no U+0000 (422); stored as jsonb, so object keys come back in jsonb order. labels: an object of at most ${LABELS_MAX} entries, keys ${LABEL_KEY_PATTERN}, string values of at most ${LABEL_VALUE_MAX_LENGTH} characters (422). One Temporal workflow timer/<timer_id> per timer (search attributes TenantId, Service=runs), started after the commit through an outbox (a sweeper starts what a process could not); it sleeps on Temporal's durable timer and runs no container.`,
  timer_fired:
    "At fire_at the timer's workflow marks it fired (fired_at, fire_delay_seconds = fired_at − fire_at in seconds to the millisecond, never below 0) and writes its timer.fired notice in the same statement; the publisher delivers it like any event, signed, to the tenant's endpoints whose events name timer.fired (no wildcard covers a notice) and to the timer's inline webhook if its events name it. Envelope: resource {type: timer, id: timer_id}, data {timer_id, fire_at, fired_at, fire_delay_seconds, labels, payload}. Written once: a retried or replayed fire finds the timer fired and writes nothing.",
  timer_list: `GET /api/v1/timers: newest first, {timers, limit, offset}, each timer without its payload (GET /api/v1/timers/{timer_id} has it); limit default ${TIMERS_LIST_LIMIT_DEFAULT}, max ${TIMERS_LIST_LIMIT_MAX}; offset; state_filter a comma-separated list of pending, fired, cancelled; label_filter key=value, repeatable (label_filter=a=1&label_filter=b=2), every pair must be among the timer's labels, the value being everything after the first '=' (commas included); unknown parameters 400.`,
  timer_delete:
    "DELETE on a pending timer: one conditional UPDATE pending → cancelled decides against a concurrent fire, then the workflow is cancelled, best effort (one that misses it finds the row cancelled when it wakes and fires nothing); 204. On a fired timer 409 timer_already_fired; on a cancelled one 204 again (nothing changes). Another tenant's timer, or an id of any shape, is 404 timer_not_found on every route. Fired and cancelled timers are kept and listed.",
  timer_quota:
    'max_pending_timers (tenant quota, default 1000, GET/PUT /api/v1/tenant/quotas) counts pending timers only: one that fires or is cancelled frees its slot. At it POST is 429 timer_quota_exceeded; counted and inserted under a lock on the tenant quota row, so two creations never both take the last slot.',
  timer_audit:
    'timer.create and timer.cancel are in the audit log, target the timer, in the transaction of the change.',
};

/**
 * The runs service's contract (OpenAPI 3.1), served at GET /openapi.json. Its paths, parameters,
 * request bodies and models are generated from the operations (api/runs/routes/), the joi
 * schemas its routes validate with; `x-decisions` records what the spec left "not shown", and the
 * integration tests validate real responses against it.
 */
function buildDocument() {
  const schemas: JsonSchema = {};
  const paths = openApiPaths(SERVICE_OPERATIONS, schemas);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Container run service (runs)',
      version: '1.0.0',
      license: OPENAPI_LICENSE,
      description:
        'Runs of container images under limits on Docker, driven by one Temporal workflow per run (`run/<track_id>`), and DAG workflows of runs, one Temporal workflow each (`dag/<workflow_id>`).',
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
        'DELETE on a terminal run removes it with its events, samples, log files and log cache (204); its metering in the quota service stays. On an active run: 409 not_terminal (stop or kill it first).',
      control_states:
        'pause: running only (409 not_running); resume: paused only (409 not_paused); stop and kill: running or paused (409 not_running). stop = SIGTERM, 10 s grace, SIGKILL; the run ends exited (reason stopped) whatever the exit code. A kill may overtake a stop in its grace period.',
      timeout: 'timeout_seconds counts time spent running; paused time is not counted.',
      rate_limit:
        'Per tenant: RUNS_RATE_LIMIT_REQUESTS (default 2000) requests per window of RUNS_RATE_LIMIT_WINDOW_SECONDS (default 10) that starts with the first request; past it 429 rate_limited with Retry-After.',
      logs: "since/next_since are 0-based line offsets per stream; since omitted tails the last `limit` lines. X-Log-Source: cache (Redis live tail), file (the stream file), object (the object store, RUNS_LOG_S3_*) or none (nothing captured yet). `both` keeps Docker's arrival order, which does not order one stream against the other.",
      metering:
        "Metered keys are metered through the quota service (QUOTA_URL, RUNS_QUOTA_KEY): a metered tier is a quota plan runs-<tier> with one daily policy (UTC day, strict) on the resource runs-seconds, whose limit is the tier's metered_seconds_per_day (none: the largest integer, never refusing), and each of its keys is the subject runs:<tenant_id>:<key_id> on it (made by scripts/runs-admin). A run reserves its full clamped timeout_seconds at submit (a DAG node's run when it is made), keyed runs:<track_id>:reserve, and when it ends commits the seconds it ran (rounded up), keyed runs:<track_id>:commit: the unused remainder is released. Every end path (the run's, a retried activity, the reconciler, a lost host) commits the same reservation, so a run is charged once. A reservation held past its ttl (a day at most) is charged by a consume of the seconds used instead. Without QUOTA_URL or RUNS_QUOTA_KEY metering is off (logged at start): metered keys are served and not charged, and usage reports metered: false.",
      metered_cap:
        'A submit whose up-front reservation would pass the day of its policy (reservations of runs not ended at their full timeout, ended runs at what they ran; GET /api/v1/usage reports it as metered_run_seconds, from the quota service) is refused with 429 metered_quota_exceeded (details: metered_seconds_per_day, used_seconds, timeout_seconds) and nothing is written. A run refused by the daily run count gives its reservation back. When the quota service does not answer, a metered submit, workflow submit, template run or usage read is 503 metering_unavailable with Retry-After and nothing is written; an unmetered key is not affected.',
      validation: 'Body schema errors (unknown fields included) are 422; malformed JSON is 400.',
      reconcile:
        "A run whose workflow execution run/<track_id> was closed outside the run's own logic (an operator terminated, cancelled or reset it in the Web UI or CLI, or it failed or timed out at the Temporal level) is repaired by the Temporal schedule schedule/runs-reconcile (every 2 minutes, at most 50 runs per pass): the run ends failed with the reason workflow_terminated, workflow_failed, workflow_timed_out, workflow_cancelled or workflow_completed (the workflow completed without recording an end) after Temporal has reported it closed for 60 s, or workflow_missing when the execution no longer exists (history deleted) and the row has not changed for 5 minutes; a run whose workflow start is not yet confirmed is left to the start sweeper. The end is an ordinary run.failed event (payload reconciled: true, workflow_status, workflow_run_id, workflow_closed_at); the container is removed on its host, the slot is given back (waiting runs are woken) and a metered run commits the seconds from started_at to the workflow's close. A run whose workflow is running (also after a reset) is never touched; the change is conditional on the state read, so a workflow or a second reconciler that records the end first wins. A pass also signals hostLost to each running or paused run whose Docker host has not announced itself for 3 minutes: the run ends failed with reason host_lost (payload worker_id, silent_seconds), its slot is given back, a metered key is charged up to the host's last sign of life, and the host's worker removes the container if it comes back.",
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
      workflow_submit:
        "Checked in this order after the schema: too_many_nodes (more nodes than max_nodes_per_workflow narrowed by the key's tier workflow_nodes; whatever the quota, a request carries at most 1000 nodes and 5000 edges, else 422), invalid_graph (a duplicate ref, an edge naming a missing ref, two edges between the same pair of nodes, inputs_from naming a missing node, or a cycle; the first found), invalid_image:<image> per container node (the image string, as a run's), image_not_allowed, then the metered cap, max_concurrent_workflows and max_daily_runs. Unknown keys in a node are stripped silently; unknown top-level and edge keys are 422. An approval node's image, command, env, retries and limits are ignored (it runs nothing). Each container node's timeout_seconds, cpu_limit and memory_limit_mb are defaulted and clamped exactly as a run's and stored clamped; the 202 answers clamped: true when any node was clamped.",
      workflow_quotas:
        "max_concurrent_workflows counts the tenant's pending, running and paused workflows (429 workflow_quota_exceeded at it). Every node, approval gates included, counts as one run against max_daily_runs at submit (all or nothing: 429 daily_quota_exceeded when they do not all fit in the day's remaining runs); a node's retries are not counted again. A metered key is refused 429 metered_quota_exceeded when the sum of its container nodes' clamped timeouts does not fit in what is left of its day (the quota service's check, holding nothing); each node run then reserves its own seconds when it is made, and a node whose seconds no longer fit then fails without a run, output {error: metered_quota_exceeded}.",
      workflow_node_bounds:
        'ref: 1 to 128 characters, unique in the workflow; retries 0 to 10 (default 0); retry_backoff_seconds 0 to 3600 (default 10, fixed); inputs_from at most 1000 refs; command and env bounded as a run’s.',
      workflow_reads:
        "GET /api/v1/workflows: newest first, limit default 50, max 1000, offset; state_filter a comma-separated list of workflow states, tag one tag, template_id exact; each item is the workflow without its nodes and edges. Events: since default 0, limit default 200, max 1000; a JSON array, ids are integers (monotonic per workflow, not consecutive). A workflow of another tenant, or an id that is no ULID, is 404 workflow_not_found on every route; an unknown ref is 404 node_not_found. Result: 409 not_terminal while pending, running or paused; duration_seconds is finished_at − started_at (0 when no node launched); attempts is the count of the node's runs.",
      workflow_control:
        "pause, resume, cancel, approve and reject are Temporal updates decided by dag/<workflow_id> (its validators), so of two racing calls one wins; the refusal is the workflow's code (409; node_not_found 404). Once the execution has ended, pause is 409 not_pausable, resume not_paused, cancel already_terminal, approve and reject not_awaiting_approval. approve and reject on a container node are 409 not_an_approval_node from the stored workflow. A success answers 200 {status, message}: status is the workflow's new state (pause: paused, resume: running, cancel: cancelled) or the gate's (approve: succeeded, reject: failed). A control of an active workflow whose execution is not started yet (the start follows the submit's commit at once) is sent again for up to 3 s; past that, or when the execution does not answer within 5 s, it is 503 workflow_unavailable with Retry-After (the control may still be carried out: read the workflow before retrying). Each success is in the audit log as workflow.pause, workflow.resume, workflow.cancel, workflow.node.approve, workflow.node.reject or workflow.node.retry, target the workflow.",
      workflow_node_retry:
        "A node retry needs a finished workflow: an active node is 409 node_not_terminal, an active workflow 409 not_terminal. The node and its downstream closure are reset to pending and the workflow runs again in a new execution of dag/<workflow_id> (update-with-start, an open execution used as is), under the calling key's terms (queue time, tier concurrency, metering, working hours); 429 workflow_quota_exceeded when that would pass max_concurrent_workflows. Answers 200 {status: 'running', message: 'reset <n> node(s) to pending: a, b'}.",
      run_of_workflow:
        'A run made for a workflow node carries workflow_id and node_ref (null for a plain run); the run routes (svc_run_*) work on it as on any run, while the workflow routes need svc_workflow_submit, svc_workflow_read or svc_workflow_control.',
      ...WEBHOOK_DECISIONS,
      ...TEMPLATE_DECISIONS,
      ...TIMER_DECISIONS,
      ...SCHEDULE_DECISIONS,
      ...TRIGGER_DECISIONS,
      permissions: PERMISSIONS,
    },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'UUIDv4 API key' },
      },
      schemas,
    },
    paths,
  };
}

export const openApiDocument = buildDocument();
