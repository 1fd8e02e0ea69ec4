import { PERMISSIONS, type Permission } from '../../db/runs/permissions';
import { RUN_STATES, TERMINAL_STATES } from '../../db/runs/runs';
import {
  NODE_STATES,
  TERMINAL_NODE_STATES,
  TERMINAL_WORKFLOW_STATES,
  WORKFLOW_STATES,
} from '../../contracts/runs/dag-rules';
import { CONTROL_FROM_STATES } from '../../contracts/runs/run';
import type { ErrorDefinition } from '../../platform/errors';
import { RUNS_ERRORS } from '../../services/runs/errors';
import { mcpGuide, permissionsOf } from './mcp';
import { SERVICE_OPERATIONS } from './openapi';
import type { RunsOperation } from './routes';
import { NODE_EVENTS, RUN_EVENTS, WORKFLOW_EVENTS } from '../../services/runs/webhooks/catalogue';

const list = (values: readonly string[]) => values.join(', ');
const split = (all: readonly string[], terminal: readonly string[]) =>
  `${list(all.filter((s) => !terminal.includes(s)))} (active); ${list(terminal)} (terminal)`;

/** Each permission and the operations whose route checks it, from the operations themselves. */
export function permissionLines(operations: readonly RunsOperation[] = SERVICE_OPERATIONS): string {
  const byPermission = new Map<Permission, string[]>(PERMISSIONS.map((p) => [p, []]));
  for (const operation of operations)
    for (const permission of permissionsOf(operation))
      byPermission.get(permission)?.push(`${operation.method.toUpperCase()} ${operation.path}`);
  return [...byPermission]
    .map(([permission, routes]) => `- ${permission}: ${routes.join(', ') || '(no route)'}`)
    .join('\n');
}

/** The catalogue's errors by status, each as its `detail`; `(retry)` marks the retryable ones. */
export function errorLines(): string {
  const byStatus = new Map<number, string[]>();
  for (const d of Object.values(RUNS_ERRORS as Record<string, ErrorDefinition>)) {
    const text = `${d.message}${d.description ? ` (${d.description})` : ''}`;
    byStatus.set(d.status, [
      ...(byStatus.get(d.status) ?? []),
      d.retryable ? `${text} (retry)` : text,
    ]);
  }
  return [...byStatus]
    .sort(([a], [b]) => a - b)
    .map(([status, details]) => `- ${status}: ${details.join('; ')}`)
    .join('\n');
}

const controls = Object.entries(CONTROL_FROM_STATES)
  .map(([action, from]) => `${action} from ${list(from)}`)
  .join('; ');

/** /llms.txt: what an agent needs to use the runs service well, in one page. */
export const LLMS_TXT = `# Container run service (runs)

Runs container images under CPU, memory and time limits on Docker, DAG workflows of such runs,
and workflow templates, per tenant. Full contract: /openapi.json (every field, bound and code;
\`x-decisions\` says what the spec left open). Every endpoint but /ping, /readyz, /health, /metrics,
/openapi.json, /llms.txt and /mcp is under /api/v1. Ids (track_id, workflow_id) are ULIDs.

## Auth
Send \`Authorization: Bearer <key>\` (a UUIDv4 issued to the tenant) on every call. No or a bad
key: 401 {"detail": "missing or invalid bearer token"} with WWW-Authenticate: Bearer. A key
without the operation's permission: 403 {"detail": "permission_denied"}. A key sees only its
tenant's runs, workflows and templates: another tenant's id is 404 (run_not_found,
workflow_not_found, template_not_found), exactly as an id that does not exist.

## Permissions (each operation and the permissions its route checks)
${permissionLines()}
Workflow routes need svc_workflow_*, not svc_run_*; the run routes work on a node's run too.

## Run lifecycle
States: ${split(RUN_STATES, TERMINAL_STATES)}.
POST /api/v1/runs answers 202 {track_id, status: scheduled, eligible_start, clamped}; never
refused for capacity (runs wait for a slot; max_daily_runs is 429 daily_quota_exceeded). Limits
above the tenant's maxima are clamped (clamped: true). scheduled → queued (a slot and a worker
free, from eligible_start) → pulling → running → exited (exit 0, or stop) | failed (non-zero exit,
start failure, queue_timeout past max_queue_seconds, expired past expires_at) | timeout | killed.
Controls (POST /api/v1/runs/{track_id}/<action>, 204): ${controls}; else 409 (not_running,
not_paused). Pause freezes the container with its memory; resume continues it. stop is SIGTERM,
10 s grace, SIGKILL (ends exited). GET .../result is 409 not_terminal until terminal. Logs: GET
.../logs?since=<next_since> pages forward; eof false means more may come. DELETE a terminal run
only (409 not_terminal while active). Poll GET /api/v1/runs/{track_id} (or take webhooks).

## DAG (workflow) lifecycle
Workflow states: ${split(WORKFLOW_STATES, TERMINAL_WORKFLOW_STATES)}.
Node states: ${split(NODE_STATES, TERMINAL_NODE_STATES)}.
POST /api/v1/workflows {nodes, edges, failure_policy} answers 202 {workflow_id, status}; each node
is one run (type container) or an approval gate (type approval, runs nothing). An edge
{from, to, condition: on_success | on_failure | always} fires when the upstream ends succeeded,
failed, or either; a skipped or cancelled upstream satisfies none, and a node whose edges can
never be satisfied is skipped. A node's output is the JSON of its last stdout line;
inputs_from injects upstream outputs as SVC_INPUT_<REF> (declare the edge too). A failed attempt
with retries left goes retrying and runs again after retry_backoff_seconds (fixed). fail_fast
(default): after a failure only failure paths run, the rest are skipped; continue: unaffected
branches finish. The workflow ends succeeded when no node failed, else failed (failed_nodes).
Controls (POST /api/v1/workflows/{workflow_id}/...): pause (pending or running; else 409
not_pausable; in-flight nodes finish), resume (paused; else 409 not_paused), cancel (active;
else 409 already_terminal; kills runs in flight), nodes/{ref}/approve and /reject (a gate in
waiting_approval; else 409 not_awaiting_approval or not_an_approval_node), nodes/{ref}/retry (a
terminal node of a finished workflow: it and its downstream reset to pending; 409
node_not_terminal or not_terminal). GET .../result is 409 not_terminal while active. GET
.../events?since=<highest id seen> is a cursor feed: replay from 0, poll with the last id.
Templates: POST /api/v1/templates {name?, params, definition with \${{ name }} placeholders}
(201, version 1); POST /api/v1/templates/{ref}/run {params, version?} is a workflow submit (202
{workflow_id, template_id, version, status}); a bad parameter is 422 before anything starts.

## Webhooks and signature verification
Register an endpoint (POST /api/v1/webhooks {url (https), events}: 201 with its secret, shown
once) or pass an inline {url, events, secret?} on a run, workflow or template-run submit.
Events: ${list(RUN_EVENTS)}; ${list(WORKFLOW_EVENTS)}; ${list(NODE_EVENTS)}; aliases
run.terminal, workflow.terminal; wildcards run.*, workflow.*, node.*, *.
Each delivery is a POST of the JSON envelope {event_id, event_type, occurred_at, tenant_id,
resource {type, id}, data, delivery {delivery_id, attempt, endpoint_id}, truncated} with headers
X-Svc-Event, X-Svc-Event-Id, X-Svc-Delivery, X-Svc-Attempt, X-Svc-Timestamp (Unix seconds) and
X-Svc-Signature: sha256=<hex of HMAC-SHA256(key, "<X-Svc-Timestamp>.<raw body>")>, or none for
an inline webhook without a secret. The key: for a generated secret (secret_origin generated,
64 hex characters) the 32 bytes it hex-decodes to; for a supplied secret its UTF-8 bytes,
verbatim. Verify over the raw body bytes (never re-serialised JSON), compare in constant time,
reject an old timestamp, and during a rotation accept any current candidate secret:
  key = origin === 'generated' ? Buffer.from(secret, 'hex') : Buffer.from(secret, 'utf8')
  expected = 'sha256=' + createHmac('sha256', key).update(\`\${timestamp}.\${rawBody}\`).digest('hex')
Each attempt is signed anew; only the body and X-Svc-Event-Id are stable across attempts, so
dedupe on event_id (delivery is at least once). Answer 2xx to accept; 408, 429, 5xx, timeouts
and transport failures are retried (about 10 s, 60 s, 5 min, 30 min; at most 5 attempts); any
other 4xx is dead at once; a 3xx is not followed.

## Retry rule
Retry only 429 and 503, after Retry-After seconds (else 1 s, doubling, at most 5 tries).
Never retry another 4xx: the same request gets the same answer. A submit (run, workflow,
template run) is not idempotent: after a timeout or a 503, list or read (by name or tag) before
submitting again. A control answered 503 workflow_unavailable may still have been carried out:
read the run or workflow before retrying. A node's own retries are its \`retries\` (0 to 10) and
fixed \`retry_backoff_seconds\` (default 10).

## Errors
Every refusal is {"detail": "<code>"}; a code may carry more after it (invalid_image:<ref>,
unknown_template_param:<name>, a 422's joi message). Codes by status:
${errorLines()}

${mcpGuide()}
`;
