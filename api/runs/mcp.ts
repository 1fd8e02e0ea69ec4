import type { Middleware } from 'koa';
import type { Permission } from '../../db/runs/permissions';
import {
  mcpEndpoint,
  operationTools,
  type OperationTool,
  type RequestListener,
  type ToolAnnotations,
} from '../mcp';
import { RUNS_OPERATIONS, type RunsOperation } from './routes';

/** Reads: nothing changes, however often. */
const READ: ToolAnnotations = { readOnlyHint: true, idempotentHint: true, openWorldHint: false };
/**
 * Submits (a run, a workflow, a template run, a template): each call makes a new one and counts
 * against the daily quota; nothing is overwritten. A submit starts containers: images pulled from
 * registries running code of the caller's choice, which may reach the network, and webhooks to
 * the caller's URLs (open world).
 */
const SUBMIT: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
};
const REGISTER: ToolAnnotations = { ...SUBMIT, openWorldHint: false };
/**
 * Pause and resume: reversible, and a repeat changes nothing (409 in the wrong state). Resuming a
 * workflow launches its pending nodes (containers: open world).
 */
const SUSPEND: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
};
/**
 * Ends for good (stop, kill, cancel, delete, a gate's decision, quotas overwritten): a repeat
 * changes nothing more (409 or 404, or the same values).
 */
const END: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: true,
  openWorldHint: false,
};
/** A gate's decision: final, and the nodes behind it launch (containers: open world). */
const DECIDE: ToolAnnotations = { ...END, openWorldHint: true };
/**
 * Retrying a node of a finished workflow resets it and its downstream closure (their state and
 * output) and runs them again; a call after the workflow has finished again reruns them again.
 */
const RETRY: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
};

/**
 * Recover re-sends to the tenant's own URL (open world) what its endpoint never received; a
 * repeat sends nothing already under way or delivered, but once those die again it sends again.
 */
const RECOVER: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
};

const ops = RUNS_OPERATIONS;

/**
 * The operations offered as tools, in the order tools/list lists them: the spec's parity set
 * (runs, workflows, quotas, usage, audit), the template tools (register, list, get, run) and
 * webhook recovery. Template PATCH and DELETE, timers, schedules, triggers and the other webhook
 * operations are REST only.
 */
const TOOL_OPERATIONS: [RunsOperation, ToolAnnotations][] = [
  [ops.submit, SUBMIT],
  [ops.list, READ],
  [ops.get, READ],
  [ops.result, READ],
  [ops.logs, READ],
  [ops.utilization, READ],
  [ops.pause, SUSPEND],
  [ops.resume, SUSPEND],
  [ops.stop, END],
  [ops.kill, END],
  [ops.delete, END],
  [ops.workflowSubmit, SUBMIT],
  [ops.workflowList, READ],
  [ops.workflowGet, READ],
  [ops.workflowNode, READ],
  [ops.workflowResult, READ],
  [ops.workflowEvents, READ],
  [ops.workflowPause, SUSPEND],
  [ops.workflowResume, { ...SUSPEND, openWorldHint: true }],
  [ops.workflowCancel, END],
  [ops.workflowNodeRetry, RETRY],
  [ops.workflowNodeApprove, DECIDE],
  [ops.workflowNodeReject, DECIDE],
  [ops.quotasGet, READ],
  [ops.quotasPut, END],
  [ops.usage, READ],
  [ops.audit, READ],
  [ops.templateCreate, REGISTER],
  [ops.templateList, READ],
  [ops.templateGet, READ],
  [ops.templateRun, SUBMIT],
  [ops.endpointRecover, RECOVER],
];

/** `submitRun` → `submit_run`: a tool is named by its operationId, in snake_case. */
export const toolNameOf = (operationId: string): string =>
  operationId.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** Every permission an operation's route checks (a template run needs two). */
export function permissionsOf(operation: RunsOperation): Permission[] {
  const all = operation.extensions?.['x-permissions'] as Permission[] | undefined;
  return all ?? (operation.permission ? [operation.permission] : []);
}

const permissionSentence = (operation: RunsOperation) => {
  const needed = permissionsOf(operation).map((p) => `\`${p}\``);
  return needed.length === 1
    ? `Requires permission ${needed[0]}.`
    : `Requires permissions ${needed.join(' and ')}.`;
};

/**
 * The runs service's MCP tools: each is one REST operation (its route, permission check,
 * validation and service function), its arguments the operation's path parameters, query and body.
 */
export const RUNS_MCP_TOOLS: OperationTool<RunsOperation>[] = operationTools(
  TOOL_OPERATIONS.map(([operation, annotations]) => ({
    name: toolNameOf(operation.operationId),
    operation,
    annotations,
  })),
  permissionSentence,
);

const INSTRUCTIONS =
  'Container runs, DAG workflows of runs, workflow templates, and the tenant\'s quotas, usage and audit log. Each tool is one REST operation of /openapi.json, called with your bearer key: the permission it names (svc_*), validation and tenant scoping apply as for REST. A result is the REST JSON body, exactly (a 204 has none: its one content item is the status line, HTTP 204 No Content). A refusal is a tool error: the REST body {"detail": "<code>"} and the HTTP status (404 run_not_found for another tenant\'s id, 409 for a wrong state, 422 for bad arguments). Retry only 429 and 503, after Retry-After; a submit is not idempotent, so read before resubmitting. /llms.txt has the lifecycles and the rest.';

/** POST /mcp: the runs tools over MCP's streamable HTTP, each calling its route in `listener`. */
export function runsMcpEndpoint(listener: () => RequestListener): Middleware {
  return mcpEndpoint({
    name: 'runs',
    version: '1.0.0',
    instructions: INSTRUCTIONS,
    tools: RUNS_MCP_TOOLS,
    listener,
  });
}

/** The MCP section of /llms.txt, its tool list generated from the tools. */
export function mcpGuide(): string {
  const tools = RUNS_MCP_TOOLS.map((tool) => {
    const { operation } = tool;
    const permissions = permissionsOf(operation).join(' + ');
    return `- ${tool.name}: ${operation.method.toUpperCase()} ${operation.path} (${permissions})`;
  });
  return `## MCP
POST /mcp (or /mcp/): MCP over streamable HTTP, stateless (no session; GET and DELETE are 405),
JSON responses. Send the same \`Authorization: Bearer <key>\` header on every request; no or a
bad key is 401 before any MCP handling, and each MCP request counts against the tenant's rate
limit (a tool call's REST request counts too). tools/list lists every tool whatever the key's
permissions (a call outside them is the REST 403 permission_denied). Each tool is one REST
operation, called in-process with your key: its arguments are the operation's path parameters,
query and body as one object (its input schema is generated from the route's own schemas); its
result is the REST body, exactly; a refusal is a tool error carrying the REST body
({"detail": "<code>"}) and the HTTP status. Tool names are the operationIds in snake_case.
${tools.join('\n')}`;
}
