import type Router from '@koa/router';
import type { Context } from 'koa';
import type { PlatformDeps } from '../../../platform/deps';
import type { WorkflowState } from '../../../db/runs/workflows';
import { principalOf } from '../auth';
import { controlWorkflow, decideGate, retryNode } from '../../../services/runs/dags/control';
import {
  getNodeDetail,
  getWorkflowResult,
  getWorkflowStatus,
  listTenantWorkflows,
  listWorkflowEvents,
} from '../../../services/runs/dags/reads';
import { submitWorkflow, type WorkflowSubmitBody } from '../../../services/runs/dags/submit';
import { WorkflowSubmitRequest } from '../../../services/runs/dags/submit-request';
import {
  mountOperation,
  nodeRefOf,
  validated,
  workflowIdOf,
  type RunsDeps,
  type Starters,
} from './operation';
import Joi from 'joi';
import { boundedText } from '../../../platform/text';
import { WORKFLOW_STATES } from '../../../db/runs/workflows';
import { runsError } from '../../../services/runs/errors';
import {
  TAG_MAX_LENGTH,
  offset,
  pageLimit,
  stateFilter,
  ulidParam,
} from '../../../services/runs/schemas';
import { ok, runsOperation, type RunsOperation } from './operation';
import {
  ControlResponse,
  NodeDetail,
  WorkflowEvents,
  WorkflowList,
  WorkflowResult,
  WorkflowStatus,
  WorkflowSubmitResponse,
} from '../../../services/runs/dags/models';

export const WORKFLOWS_LIST_LIMIT_DEFAULT = 50;
export const WORKFLOWS_LIST_LIMIT_MAX = 1000;
export const WORKFLOW_EVENTS_LIMIT_DEFAULT = 200;
export const WORKFLOW_EVENTS_LIMIT_MAX = 1000;
export const TEMPLATE_ID_MAX_LENGTH = 128;

const workflowNotFound = () => runsError('workflow_not_found');
const workflowParams = Joi.object({ workflow_id: ulidParam(workflowNotFound) });
const nodeParams = Joi.object({
  workflow_id: ulidParam(workflowNotFound),
  ref: Joi.string().required().description('A node ref (404 node_not_found when none has it).'),
});

/** The refusals every workflow operation states in its own words (not a run's). */
const WORKFLOW_REFUSALS = {
  '400': 'An unknown query parameter (the detail names the supported set).',
  '403':
    "`permission_denied`: the key lacks the operation's svc_workflow_* permission (run permissions grant no workflow route).",
  '429': '`rate_limited` (with `Retry-After`).',
  '503': 'A backend is briefly unreachable (Postgres or Redis restarting); with Retry-After.',
} as const;
const WORKFLOW_NOT_FOUND =
  "`workflow_not_found`: no such workflow, or not this tenant's (whatever the id's shape).";
const NODE_NOT_FOUND =
  "`workflow_not_found` (no such workflow, or not this tenant's), or `node_not_found` (the workflow has no node of that ref).";

type WorkflowOperation = Omit<RunsOperation, 'permission'>;

/** The refusals of an operation on one workflow (a workflow in its path). */
const ofOneWorkflow = (op: WorkflowOperation) =>
  op.request?.params ? { ...WORKFLOW_REFUSALS, '404': WORKFLOW_NOT_FOUND } : WORKFLOW_REFUSALS;

const read = (op: WorkflowOperation) =>
  runsOperation({
    ...op,
    permission: 'svc_workflow_read',
    refusals: { ...ofOneWorkflow(op), ...op.refusals },
  });

const CONTROL_UNAVAILABLE =
  "`workflow_unavailable`: the workflow's execution did not answer within 5 s, or was still not started 3 s after the call (the control may still be carried out: read the workflow before retrying); or a backend is briefly unreachable. With Retry-After.";

const control = (op: WorkflowOperation) =>
  runsOperation({
    ...op,
    method: 'post',
    permission: 'svc_workflow_control',
    responses: { '200': ok(ControlResponse, 'Done: the new state') },
    refusals: { ...ofOneWorkflow(op), '503': CONTROL_UNAVAILABLE, ...op.refusals },
  });

/** A control of the whole workflow: pause, resume or cancel. */
const workflowControl = (
  action: 'pause' | 'resume' | 'cancel',
  conflict: string,
  description: string,
) =>
  control({
    method: 'post',
    path: `/api/v1/workflows/{workflow_id}/${action}`,
    operationId: `${action}Workflow`,
    routeName: `workflow.${action}`,
    summary: `${action[0]!.toUpperCase()}${action.slice(1)} a workflow`,
    description: `Decided by the workflow's execution (a Temporal update), so of two racing calls one wins. ${description}`,
    request: { params: workflowParams },
    responses: {},
    refusals: { '409': conflict },
  });

/** approve or reject: a gate's decision. */
const gateControl = (action: 'approve' | 'reject', outcome: string) =>
  control({
    method: 'post',
    path: `/api/v1/workflows/{workflow_id}/nodes/{ref}/${action}`,
    operationId: `${action}WorkflowNode`,
    routeName: `workflow.node.${action}`,
    summary: `${action[0]!.toUpperCase()}${action.slice(1)} an approval gate`,
    description: `The gate (in waiting_approval) ends ${outcome}; answers {status: '${outcome}'}, the node's new state.`,
    request: { params: nodeParams },
    responses: {},
    refusals: {
      '404': NODE_NOT_FOUND,
      '409':
        '`not_an_approval_node` (a container node), or `not_awaiting_approval` (the gate is not in waiting_approval, also once the workflow has ended).',
    },
  });

/** The workflow operations of the runs service (the spec's Workflows endpoint table). */
export const WORKFLOW_OPERATIONS = {
  workflowSubmit: runsOperation({
    method: 'post',
    path: '/api/v1/workflows',
    operationId: 'submitWorkflow',
    routeName: 'workflow.submit',
    permission: 'svc_workflow_submit',
    summary: 'Submit a DAG workflow',
    description:
      "Accepted pending; its execution dag/<workflow_id> is started after the answer. Each node's limits are clamped as a run's. Every node counts against max_daily_runs now.",
    request: { body: WorkflowSubmitRequest },
    responses: { '202': ok(WorkflowSubmitResponse, 'Accepted') },
    refusals: {
      '400':
        "Malformed JSON; `invalid_graph` (a cycle, a duplicate ref, an edge naming a missing ref, two edges between the same nodes, or inputs_from naming a missing node); `invalid_image:<ref>` (a container node's image, named as the image string, as for a run); `too_many_nodes` (more nodes than max_nodes_per_workflow, narrowed by the key's tier workflow_nodes); for the inline webhook, `invalid_webhook_url` or `unknown_event_type`.",
      '403':
        "`permission_denied`, or `image_not_allowed` when a container node's image is not on the key's tier allowlist.",
      '422':
        'Schema mismatch (joi message): an unknown top-level, edge or `webhook` field, a container node without `image`, a ref over 128 characters, retries over 10, more than 1000 nodes, ...',
      '429':
        "`workflow_quota_exceeded` (the tenant has max_concurrent_workflows active), `daily_quota_exceeded` (its nodes do not fit in the day's remaining runs), `metered_quota_exceeded` (a metered key: its container nodes' timeouts would pass the day's cap), or `rate_limited` (with `Retry-After`).",
      '503': WORKFLOW_REFUSALS['503'],
    },
  }),
  workflowList: read({
    method: 'get',
    path: '/api/v1/workflows',
    operationId: 'listWorkflows',
    routeName: 'workflow.list',
    summary: 'List workflows, newest first',
    request: {
      query: Joi.object({
        state_filter: stateFilter(WORKFLOW_STATES),
        tag: boundedText(TAG_MAX_LENGTH),
        template_id: boundedText(TEMPLATE_ID_MAX_LENGTH),
        limit: pageLimit(WORKFLOWS_LIST_LIMIT_MAX, WORKFLOWS_LIST_LIMIT_DEFAULT),
        offset: offset().default(0),
      }),
    },
    responses: { '200': ok(WorkflowList) },
  }),
  workflowGet: read({
    method: 'get',
    path: '/api/v1/workflows/{workflow_id}',
    operationId: 'getWorkflow',
    routeName: 'workflow.get',
    summary: 'Workflow status',
    request: { params: workflowParams },
    responses: { '200': ok(WorkflowStatus) },
  }),
  workflowNode: read({
    method: 'get',
    path: '/api/v1/workflows/{workflow_id}/nodes/{ref}',
    operationId: 'getWorkflowNode',
    routeName: 'workflow.node',
    summary: 'Node detail',
    request: { params: nodeParams },
    responses: { '200': ok(NodeDetail) },
    refusals: { '404': NODE_NOT_FOUND },
  }),
  workflowResult: read({
    method: 'get',
    path: '/api/v1/workflows/{workflow_id}/result',
    operationId: 'getWorkflowResult',
    routeName: 'workflow.result',
    summary: 'Workflow result (terminal only)',
    request: { params: workflowParams },
    responses: { '200': ok(WorkflowResult) },
    refusals: { '409': '`not_terminal`: the workflow is pending, running or paused.' },
  }),
  workflowEvents: read({
    method: 'get',
    path: '/api/v1/workflows/{workflow_id}/events',
    operationId: 'listWorkflowEvents',
    routeName: 'workflow.events',
    summary: "The workflow's events after `since`, oldest first",
    description:
      'A cursor feed: replay from 0 and poll again with the highest id seen. Ids grow in the order of the changes of one workflow; they are not consecutive.',
    request: {
      params: workflowParams,
      query: Joi.object({
        since: offset().default(0).description('An event id; 0: from the start.'),
        limit: pageLimit(WORKFLOW_EVENTS_LIMIT_MAX, WORKFLOW_EVENTS_LIMIT_DEFAULT),
      }),
    },
    responses: { '200': ok(WorkflowEvents) },
  }),
  workflowPause: workflowControl(
    'pause',
    '`not_pausable`: the workflow is not pending or running (also once it has ended).',
    "No new node launches; nodes in flight finish. Answers {status: 'paused'}.",
  ),
  workflowResume: workflowControl(
    'resume',
    '`not_paused`: the workflow is not paused.',
    "Launching goes on. Answers {status: 'running'}.",
  ),
  workflowCancel: workflowControl(
    'cancel',
    '`already_terminal`: the workflow has ended.',
    "Runs in flight are killed, remaining nodes cancelled. Answers {status: 'cancelled'}.",
  ),
  workflowNodeApprove: gateControl('approve', 'succeeded'),
  workflowNodeReject: gateControl('reject', 'failed'),
  workflowNodeRetry: control({
    method: 'post',
    path: '/api/v1/workflows/{workflow_id}/nodes/{ref}/retry',
    operationId: 'retryWorkflowNode',
    routeName: 'workflow.node.retry',
    summary: 'Retry a node of a finished workflow',
    description:
      "The node and every node downstream of it are reset to pending and the workflow runs again (its execution dag/<workflow_id> is started again, under the calling key's terms). Answers {status: 'running', message: 'reset <n> node(s) to pending: a, b'}.",
    request: { params: nodeParams },
    responses: {},
    refusals: {
      '404': NODE_NOT_FOUND,
      '409':
        '`node_not_terminal` (the node is active), or `not_terminal` (the workflow is active: a node retry needs a finished workflow).',
      '429':
        '`workflow_quota_exceeded` (running the workflow again would pass max_concurrent_workflows), or `rate_limited` (with `Retry-After`).',
    },
  }),
} satisfies Record<string, RunsOperation>;

/** The DAG workflow routes (dags/): submit, reads, controls. */
export function mountWorkflowRoutes(router: Router, deps: RunsDeps, starters: Starters): void {
  const ops = WORKFLOW_OPERATIONS;
  const tenantOf = (ctx: Context) => principalOf(ctx).tenantId;
  mountOperation(router, ops.workflowSubmit, async (ctx) => {
    const body = validated<WorkflowSubmitBody>(ctx, 'body');
    ctx.status = 202;
    ctx.body = await submitWorkflow(deps, starters.dags, principalOf(ctx), body);
  });
  mountOperation(router, ops.workflowList, async (ctx) => {
    const q = validated<{
      state_filter?: string;
      tag?: string;
      template_id?: string;
      limit: number;
      offset: number;
    }>(ctx, 'query');
    ctx.body = await listTenantWorkflows(deps, tenantOf(ctx), {
      states: q.state_filter ? (q.state_filter.split(',') as WorkflowState[]) : null,
      tag: q.tag ?? null,
      templateId: q.template_id ?? null,
      limit: q.limit,
      offset: q.offset,
    });
  });
  mountOperation(router, ops.workflowGet, async (ctx) => {
    ctx.body = await getWorkflowStatus(deps, tenantOf(ctx), workflowIdOf(ctx));
  });
  mountOperation(router, ops.workflowNode, async (ctx) => {
    ctx.body = await getNodeDetail(deps, tenantOf(ctx), workflowIdOf(ctx), nodeRefOf(ctx));
  });
  mountOperation(router, ops.workflowResult, async (ctx) => {
    ctx.body = await getWorkflowResult(deps, tenantOf(ctx), workflowIdOf(ctx));
  });
  mountOperation(router, ops.workflowEvents, async (ctx) => {
    const page = validated<{ since: number; limit: number }>(ctx, 'query');
    ctx.body = await listWorkflowEvents(deps, tenantOf(ctx), workflowIdOf(ctx), page);
  });
  mountWorkflowControls(router, deps);
}

/** A workflow's controls and its gates' decisions, and a node's retry. */
function mountWorkflowControls(router: Router, deps: PlatformDeps): void {
  const ops = WORKFLOW_OPERATIONS;
  for (const [op, action] of [
    [ops.workflowPause, 'pause'],
    [ops.workflowResume, 'resume'],
    [ops.workflowCancel, 'cancel'],
  ] as const)
    mountOperation(router, op, async (ctx) => {
      ctx.body = await controlWorkflow(deps, principalOf(ctx), workflowIdOf(ctx), action);
    });
  for (const [op, decision] of [
    [ops.workflowNodeApprove, 'approve'],
    [ops.workflowNodeReject, 'reject'],
  ] as const)
    mountOperation(router, op, async (ctx) => {
      const [workflowId, ref] = [workflowIdOf(ctx), nodeRefOf(ctx)];
      ctx.body = await decideGate(deps, principalOf(ctx), workflowId, ref, decision);
    });
  mountOperation(router, ops.workflowNodeRetry, async (ctx) => {
    ctx.body = await retryNode(deps, principalOf(ctx), workflowIdOf(ctx), nodeRefOf(ctx));
  });
}
