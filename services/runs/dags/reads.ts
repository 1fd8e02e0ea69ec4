import type { PlatformDeps } from '../../../platform/deps';
import {
  ACTIVE_WORKFLOW_STATES,
  findWorkflow,
  findWorkflowRow,
  listWorkflows,
  workflowEvents,
  type WorkflowFilter,
  type WorkflowNodeRow,
  type WorkflowRow,
} from '../../../db/runs/workflows';
import { runsError } from '../errors';

type StoredWorkflow = NonNullable<Awaited<ReturnType<typeof findWorkflow>>>;

export const isActiveWorkflow = (workflow: WorkflowRow) =>
  ACTIVE_WORKFLOW_STATES.includes(workflow.state);

/** The tenant's workflow with its nodes and edges, else 404 (another tenant's is none). */
export async function loadWorkflow(
  deps: Pick<PlatformDeps, 'pool'>,
  tenantId: string,
  workflowId: string,
): Promise<StoredWorkflow> {
  const found = await findWorkflow(deps.pool, tenantId, workflowId);
  if (!found) throw runsError('workflow_not_found');
  return found;
}

/** A node of a loaded workflow, else 404 node_not_found. */
export function nodeOf(stored: StoredWorkflow, ref: string): WorkflowNodeRow {
  const node = stored.nodes.find((n) => n.ref === ref);
  if (!node) throw runsError('node_not_found');
  return node;
}

const presentWorkflow = (w: WorkflowRow) => ({
  workflow_id: w.workflow_id,
  tenant_id: w.tenant_id,
  name: w.name,
  state: w.state,
  failure_policy: w.failure_policy,
  template_id: w.template_id,
  submitted_at: w.submitted_at,
  started_at: w.started_at,
  finished_at: w.finished_at,
  tags: w.tags,
});

export async function getWorkflowStatus(deps: PlatformDeps, tenantId: string, workflowId: string) {
  const { workflow, nodes, edges } = await loadWorkflow(deps, tenantId, workflowId);
  return {
    ...presentWorkflow(workflow),
    nodes: nodes.map((n) => ({
      ref: n.ref,
      type: n.type,
      state: n.state,
      attempt: n.attempt,
      current_track_id: n.current_track_id,
      exit_code: n.exit_code,
    })),
    edges,
  };
}

export async function getNodeDetail(
  deps: PlatformDeps,
  tenantId: string,
  workflowId: string,
  ref: string,
) {
  const node = nodeOf(await loadWorkflow(deps, tenantId, workflowId), ref);
  return {
    ref: node.ref,
    type: node.type,
    state: node.state,
    attempt: node.attempt,
    attempts: node.attempts,
    current_track_id: node.current_track_id,
    exit_code: node.exit_code,
    output: node.output,
    started_at: node.started_at,
    finished_at: node.finished_at,
  };
}

export async function getWorkflowResult(deps: PlatformDeps, tenantId: string, workflowId: string) {
  const { workflow, nodes } = await loadWorkflow(deps, tenantId, workflowId);
  if (isActiveWorkflow(workflow)) throw runsError('not_terminal');
  const started = workflow.started_at === null ? null : Date.parse(workflow.started_at);
  const finished = Date.parse(workflow.finished_at!);
  return {
    workflow_id: workflow.workflow_id,
    state: workflow.state,
    duration_seconds: started === null ? 0 : Math.max(0, finished - started) / 1000,
    nodes: nodes.map((n) => ({
      ref: n.ref,
      final_state: n.state,
      exit_code: n.exit_code,
      attempts: n.attempts.length,
      output: n.output,
    })),
    failed_nodes: nodes.filter((n) => n.state === 'failed').map((n) => n.ref),
  };
}

export async function listTenantWorkflows(
  deps: PlatformDeps,
  tenantId: string,
  filter: WorkflowFilter,
) {
  const workflows = await listWorkflows(deps.pool, tenantId, filter);
  return { workflows: workflows.map(presentWorkflow), limit: filter.limit, offset: filter.offset };
}

/** The events feed of the tenant's workflow: after `since`, oldest first, ids as JSON numbers. */
export async function listWorkflowEvents(
  deps: PlatformDeps,
  tenantId: string,
  workflowId: string,
  page: { since: number; limit: number },
) {
  if (!(await findWorkflowRow(deps.pool, tenantId, workflowId)))
    throw runsError('workflow_not_found');
  const events = await workflowEvents(deps.pool, workflowId, String(page.since), page.limit);
  return events.map((e) => ({
    id: Number(e.id),
    workflow_id: e.workflow_id,
    node_ref: e.node_ref,
    kind: e.kind,
    to_state: e.to_state,
    detail: e.detail,
    created_at: e.created_at,
  }));
}
