import type { Middleware } from 'koa';
import {
  mcpEndpoint,
  operationTools,
  type OperationToolSpec,
  type RequestListener,
  type ToolAnnotations,
} from '../mcp';
import { ALERT_OPERATIONS } from './routes/alerts';
import { CATALOGUE_OPERATIONS } from './routes/catalogue';
import { CONSUMPTION_OPERATIONS } from './routes/consumption';
import type { QuotaOperation } from './routes/operation';
import { REPORTING_OPERATIONS } from './routes/reporting';
import { SUBJECT_OPERATIONS } from './routes/subjects';

/** Reads: nothing changes, however often. */
const READ: ToolAnnotations = { readOnlyHint: true, idempotentHint: true, openWorldHint: false };
/**
 * Spending (consume, refund, reserve): each call adds ledger entries and moves usage, so a repeat
 * spends again (unless it carries the same idempotency_key); nothing is overwritten or deleted.
 */
const SPEND: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: false,
};
/**
 * Settling (commit, release): ends a reservation's hold for good; a repeat changes nothing (409
 * reservation_settled, or a released reservation as it is).
 */
const SETTLE: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: true,
  openWorldHint: false,
};

const consumption = CONSUMPTION_OPERATIONS;
const subjects = SUBJECT_OPERATIONS;
const catalogue = CATALOGUE_OPERATIONS;
const reporting = REPORTING_OPERATIONS;

const SPECS: OperationToolSpec<QuotaOperation>[] = [
  { name: 'consume', operation: consumption.consume, annotations: SPEND },
  { name: 'check', operation: consumption.check, annotations: READ },
  { name: 'refund', operation: consumption.refund, annotations: SPEND },
  { name: 'reserve', operation: consumption.reserve, annotations: SPEND },
  { name: 'commit_reservation', operation: consumption.commit, annotations: SETTLE },
  { name: 'release_reservation', operation: consumption.release, annotations: SETTLE },
  { name: 'get_reservation', operation: consumption.getReservation, annotations: READ },
  { name: 'get_subject_usage', operation: subjects.usage, annotations: READ },
  { name: 'get_subject_entitlements', operation: subjects.entitlements, annotations: READ },
  { name: 'get_subject_assignment', operation: subjects.getAssignment, annotations: READ },
  { name: 'get_subject_overrides', operation: subjects.getOverrides, annotations: READ },
  { name: 'get_ledger', operation: reporting.ledger, annotations: READ },
  { name: 'get_usage_summary', operation: reporting.summary, annotations: READ },
  { name: 'list_resources', operation: catalogue.resource.list, annotations: READ },
  { name: 'get_resource', operation: catalogue.resource.get, annotations: READ },
  { name: 'list_policies', operation: catalogue.policy.list, annotations: READ },
  { name: 'get_policy', operation: catalogue.policy.get, annotations: READ },
  { name: 'list_plans', operation: catalogue.plan.list, annotations: READ },
  { name: 'get_plan', operation: catalogue.plan.get, annotations: READ },
  { name: 'list_alert_events', operation: ALERT_OPERATIONS.listEvents, annotations: READ },
];

const scopeOf = (operation: QuotaOperation) =>
  operation.access === 'tenant' || operation.access === 'public'
    ? 'Any tenant key.'
    : `Requires scope \`${operation.access}\`.`;

/**
 * The quota service's MCP tools: each is one REST operation (its route, guard, validation and
 * service function), its arguments the operation's path parameters, query and body.
 */
export const QUOTA_MCP_TOOLS = operationTools(SPECS, scopeOf);

const INSTRUCTIONS =
  'Quotas and rate limits of one tenant: spend (consume, reserve then commit or release, refund), test (check) and read usage, ledger and catalogue. Each tool is one REST operation of /openapi.json, called with your bearer key: its scope, constraints (subject_prefix, ...) and validation apply. A result is the REST JSON body, exactly (integers can exceed 2^53). A refusal is a tool error: the REST body ({"detail": "<code>"}, or a 422\'s list of {loc, msg, type}) and the HTTP status. Retry only 503 and 429, after Retry-After; send an idempotency_key with spending calls and reuse it on retries. /llms.txt has the rest.';

/** POST /mcp: the quota tools over MCP's streamable HTTP, each calling its route in `listener`. */
export function quotaMcpEndpoint(listener: () => RequestListener): Middleware {
  return mcpEndpoint({
    name: 'quota',
    version: '0.1.0',
    instructions: INSTRUCTIONS,
    tools: QUOTA_MCP_TOOLS,
    listener,
  });
}

/** The MCP section of /llms.txt, its tool list generated from the tools. */
export function mcpGuide(): string {
  const tools = QUOTA_MCP_TOOLS.map((tool) => {
    const { operation } = tool;
    const scope = operation.access === 'tenant' ? 'any tenant key' : operation.access;
    return `- ${tool.name}: ${operation.method.toUpperCase()} ${operation.path} (scope: ${scope})`;
  });
  return `## MCP
POST /mcp/ (or /mcp): MCP over streamable HTTP, stateless (no session; GET and DELETE are 405),
JSON responses. Send the same \`Authorization: Bearer qk_...\` header on every request; no or a
bad key is 401 before any MCP handling. tools/list lists every tool whatever the key's scopes
(a call outside them is the REST 403). Each tool is one REST operation, called in-process with
your key: its arguments are the operation's path parameters, query and body as one object; its
result is the REST body, exactly; a refusal is a tool error carrying the REST body (its
\`detail\` code or 422 list) and the HTTP status.
${tools.join('\n')}`;
}
