import {
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  isGrpcDeadlineError,
} from '@temporalio/client';
import type { PlatformDeps } from '../../../platform/deps';
import { auditOf } from '../audit';
import type { KeyPrincipal } from '../../../db/runs/tenants';
import {
  DAG_REFUSALS,
  approveNodeUpdate,
  cancelDagUpdate,
  dagWorkflowId,
  pauseDagUpdate,
  rejectNodeUpdate,
  resumeDagUpdate,
  retryNodeUpdate,
  type DagRefusal,
} from '../../../contracts/runs/dag';
import { isTerminalNode } from '../../../contracts/runs/dag-rules';
import { CONTROL_ANSWER_TIMEOUT_MS, CONTROL_CATCH_UP_MS } from '../control';
import { runsError } from '../errors';
import { isActiveWorkflow, loadWorkflow, nodeOf } from './reads';
import { DAG_WORKFLOW_TYPE, dagStartOptions, dagWorkflowInput } from './starter';

/** What a successful control answers: the new state and what was done. */
export interface ControlAnswer {
  status: string;
  message: string;
}

/**
 * Each control of a whole workflow: its update, its answer, and its refusal once the execution
 * has ended (the workflow is terminal, so in the wrong state for it).
 */
const WORKFLOW_CONTROLS = {
  pause: { update: pauseDagUpdate, status: 'paused', done: 'paused', ended: 'not_pausable' },
  resume: { update: resumeDagUpdate, status: 'running', done: 'resumed', ended: 'not_paused' },
  cancel: {
    update: cancelDagUpdate,
    status: 'cancelled',
    done: 'cancelled',
    ended: 'already_terminal',
  },
} as const;
export type WorkflowControl = keyof typeof WORKFLOW_CONTROLS;

/** A gate's decisions: the node's new state. */
const GATE_DECISIONS = {
  approve: { update: approveNodeUpdate, status: 'succeeded', done: 'approved' },
  reject: { update: rejectNodeUpdate, status: 'failed', done: 'rejected' },
} as const;
export type GateDecision = keyof typeof GATE_DECISIONS;

/** Pause, resume or cancel, decided by the workflow's execution (its update validators). */
export async function controlWorkflow(
  deps: PlatformDeps,
  principal: KeyPrincipal,
  workflowId: string,
  action: WorkflowControl,
): Promise<ControlAnswer> {
  await loadWorkflow(deps, principal.tenantId, workflowId);
  const { update, status, done, ended } = WORKFLOW_CONTROLS[action];
  const handle = deps.temporal.workflow.getHandle(dagWorkflowId(workflowId));
  await decidedByWorkflow(deps, principal, workflowId, ended, () => handle.executeUpdate(update));
  await audit(deps.pool, principal, action, workflowId);
  return { status, message: `workflow ${done}` };
}

/** Approve or reject a gate: refused from the row on a container node, else as the workflow says. */
export async function decideGate(
  deps: PlatformDeps,
  principal: KeyPrincipal,
  workflowId: string,
  ref: string,
  decision: GateDecision,
): Promise<ControlAnswer> {
  const node = nodeOf(await loadWorkflow(deps, principal.tenantId, workflowId), ref);
  if (node.type !== 'approval') throw runsError('not_an_approval_node');
  const { update, status, done } = GATE_DECISIONS[decision];
  const handle = deps.temporal.workflow.getHandle(dagWorkflowId(workflowId));
  await decidedByWorkflow(deps, principal, workflowId, 'not_awaiting_approval', () =>
    handle.executeUpdate(update, { args: [ref] }),
  );
  await audit(deps.pool, principal, `node.${decision}`, workflowId, { node_ref: ref });
  return { status, message: `node ${ref} ${done}` };
}

/**
 * Retries a node of a finished workflow: the node and its downstream closure go back to pending
 * and the workflow runs again. Its execution has closed, so the update is sent with a start of
 * dag/<workflow_id> (update-with-start; an execution still open is used as is), under the
 * calling key's terms. An active node or workflow is refused from the row.
 */
export async function retryNode(
  deps: PlatformDeps,
  principal: KeyPrincipal,
  workflowId: string,
  ref: string,
): Promise<ControlAnswer> {
  const stored = await loadWorkflow(deps, principal.tenantId, workflowId);
  if (!isTerminalNode(nodeOf(stored, ref).state)) throw runsError('node_not_terminal');
  if (isActiveWorkflow(stored.workflow)) throw runsError('not_terminal');
  const input = dagWorkflowInput(deps, principal, workflowId, {
    name: stored.workflow.name,
    nodeCount: stored.nodes.length,
  });
  const startWorkflowOperation = new WithStartWorkflowOperation(DAG_WORKFLOW_TYPE, {
    ...dagStartOptions(deps, input, stored.workflow.state),
    workflowIdConflictPolicy: 'USE_EXISTING',
    // The submit's start refuses a duplicate; this one starts the closed id again on purpose.
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
  const { reset } = await decidedByWorkflow(deps, principal, workflowId, null, () =>
    deps.temporal.workflow.executeUpdateWithStart(retryNodeUpdate, {
      args: [ref],
      startWorkflowOperation,
    }),
  );
  await audit(deps.pool, principal, 'node.retry', workflowId, { node_ref: ref });
  return {
    status: 'running',
    message: `reset ${reset.length} node(s) to pending: ${reset.join(', ')}`,
  };
}

/**
 * Sends a control to the workflow's execution and maps its refusal (a DAG_REFUSALS code) to the
 * answer. An execution that has ended refuses as `ended` says when the row agrees the workflow
 * is over. While the row is active there is no open execution only until its start lands (the
 * outbox starts it right after the submit's commit): the control is sent again for up to
 * CONTROL_CATCH_UP_MS, then answered 503, as is an execution that does not answer within
 * CONTROL_ANSWER_TIMEOUT_MS (its worker is down or busy).
 */
async function decidedByWorkflow<T>(
  deps: PlatformDeps,
  principal: KeyPrincipal,
  workflowId: string,
  ended: DagRefusal | null,
  send: () => Promise<T>,
): Promise<T> {
  const catchUpUntil = Date.now() + CONTROL_CATCH_UP_MS;
  for (;;) {
    try {
      return await deps.temporal.withDeadline(Date.now() + CONTROL_ANSWER_TIMEOUT_MS, send);
    } catch (error) {
      // Past the deadline the client answers DEADLINE_EXCEEDED, or CANCELLED as this wrapper.
      if (isGrpcDeadlineError(error) || error instanceof WorkflowUpdateRPCTimeoutOrCancelledError)
        throw workflowUnavailable(error);
      const refusal = refusalOf(error);
      if (refusal === null) throw error;
      if (refusal !== 'execution_ended') throw runsError(refusal, { cause: error });
      const { workflow } = await loadWorkflow(deps, principal.tenantId, workflowId);
      if (!isActiveWorkflow(workflow))
        throw ended === null ? workflowUnavailable(error) : runsError(ended, { cause: error });
      if (Date.now() >= catchUpUntil) throw workflowUnavailable(error);
      await new Promise((resolve) => setTimeout(resolve, EXECUTION_START_POLL_MS));
    }
  }
}

/** How often a control waits for the execution of an active workflow to be started. */
const EXECUTION_START_POLL_MS = 100;
const workflowUnavailable = (cause: unknown) =>
  runsError('workflow_unavailable', { retryAfterSeconds: 1, cause });

/**
 * What a failed control means: the workflow's refusal (its update's failure message, one of
 * DAG_REFUSALS; another message is a plain `conflict`), `execution_ended` when there is no open
 * execution to take it, or null for any other error (a 500).
 */
export function refusalOf(error: unknown): DagRefusal | 'conflict' | 'execution_ended' | null {
  if (error instanceof WorkflowUpdateFailedError) {
    const message = error.cause?.message ?? '';
    return (DAG_REFUSALS as readonly string[]).includes(message)
      ? (message as DagRefusal)
      : 'conflict';
  }
  if (error instanceof WorkflowNotFoundError) return 'execution_ended';
  if (error instanceof Error && /already completed/i.test(error.message)) return 'execution_ended';
  return null;
}

const audit = auditOf('workflow');
