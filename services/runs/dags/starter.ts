import type { WorkflowStartOptions } from '@temporalio/client';
import type { PlatformDeps } from '../../../platform/deps';
import { createOutboxDispatcher, type OutboxSource } from '../../../platform/outbox';
import { taskQueues } from '../../../contracts/shared/task-queues';
import type { KeyPrincipal } from '../../../db/runs/tenants';
import {
  clearWorkflowInputs,
  dueWorkflowStarts,
  type WorkflowState,
} from '../../../db/runs/workflows';
import { DAG_STATE, executionSearchAttributes } from '../../../contracts/shared/search-attributes';
import { dagWorkflowId, type DagWorkflowInput } from '../../../contracts/runs/dag';
import { dagSummary } from '../../../contracts/runs/summaries';
import { RUN_START_RETRY_DELAY_MAX_MS, WORKFLOW_SWEEP_GRACE_SECONDS } from '../workflow-starter';

export const DAG_WORKFLOW_TYPE = 'dagWorkflow';

/**
 * The input of an execution of dag/<workflow_id> started for this key (at submit, or again by a
 * node retry): how every node run it makes waits, is limited and is charged; its name and node
 * count (`shown`) are for its summary in the Web UI.
 */
export function dagWorkflowInput(
  deps: Pick<PlatformDeps, 'config'>,
  principal: KeyPrincipal,
  workflowId: string,
  shown: { name: string | null; nodeCount: number },
): DagWorkflowInput {
  return {
    workflowId,
    name: shown.name,
    nodeCount: shown.nodeCount,
    tenantId: principal.tenantId,
    keyId: principal.keyId,
    terms: {
      maxQueueSeconds: principal.quotas.max_queue_seconds,
      tierConcurrentRuns: principal.tier?.concurrent_runs ?? null,
      metered: principal.tier?.metered ?? false,
      workingHoursTjp: principal.quotas.working_hours_tjp,
      dockerAnyHostQueue: taskQueues(deps.config.taskQueuePrefix).runsDockerAnyHost,
    },
  };
}

/**
 * How an execution of dag/<workflow_id> is started, at submit (the outbox) and again by a node
 * retry of a finished workflow: on the runs queue, found in the Web UI by tenant, service and
 * DagState (`state`: the row's state when it starts; the execution keeps it current).
 */
export function dagStartOptions(
  deps: Pick<PlatformDeps, 'config'>,
  input: DagWorkflowInput,
  state: WorkflowState,
) {
  return {
    workflowId: dagWorkflowId(input.workflowId),
    taskQueue: taskQueues(deps.config.taskQueuePrefix).runs,
    args: [input],
    typedSearchAttributes: [
      ...executionSearchAttributes(input.tenantId, 'runs'),
      { key: DAG_STATE, value: state },
    ],
    ...dagSummary(input),
  } satisfies WorkflowStartOptions;
}

/**
 * DAG starts as an outbox, as run starts are (workflow-starter.ts): submit stores the workflow
 * with its execution's input and the runs queue of its deployment; the input is cleared once
 * Temporal has dag/<workflow_id>.
 */
function dagStarts(deps: PlatformDeps): OutboxSource<DagWorkflowInput> {
  const runsQueue = taskQueues(deps.config.taskQueuePrefix).runs;
  return {
    name: 'dag starts',
    keyOf: (input) => input.workflowId,
    due: (limit, skip) =>
      dueWorkflowStarts(deps.pool, {
        queue: runsQueue,
        graceSeconds: WORKFLOW_SWEEP_GRACE_SECONDS,
        limit,
        skip,
      }),
    workflowOf: (input) => ({
      workflowType: DAG_WORKFLOW_TYPE,
      options: dagStartOptions(deps, input, 'pending'),
    }),
    markStarted: (workflowIds) => clearWorkflowInputs(deps.pool, workflowIds),
  };
}

/** Starts DAG workflows off the request path (platform/outbox.ts). */
export function createDagStarter(deps: PlatformDeps) {
  const dispatcher = createOutboxDispatcher(deps, dagStarts(deps), {
    retryDelayMaxMs: RUN_START_RETRY_DELAY_MAX_MS,
  });
  return { ...dispatcher, startInBackground: dispatcher.enqueue };
}
export type DagStarter = ReturnType<typeof createDagStarter>;
