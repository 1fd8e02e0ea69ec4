import type { PlatformDeps } from '../../platform/deps';
import { createOutboxDispatcher, type OutboxSource } from '../../platform/outbox';
import { taskQueues } from '../../contracts/shared/task-queues';
import { clearRunInputs, dueRunStarts } from '../../db/runs/runs';
import { executionSearchAttributes, RUN_STATE } from '../../contracts/shared/search-attributes';
import { runWorkflowId, type RunWorkflowInput } from '../../contracts/runs/run';
import { runSummary } from '../../contracts/runs/summaries';

/** A run younger than this is still being started by the process that stored it. */
export const WORKFLOW_SWEEP_GRACE_SECONDS = 3;
/**
 * Longest wait before a run whose start failed is tried again here: after a Temporal outage a
 * run waits at most this (and a sweep) to start, not the platform's minute.
 */
export const RUN_START_RETRY_DELAY_MAX_MS = 10_000;

/**
 * Run starts as an outbox: submit stores the run with its workflow input and the task queue of
 * its service (workflow_task_queue: the runs of another deployment's queues are not ours to
 * start); the input is cleared once Temporal has the workflow (id run/<track_id>).
 */
function runStarts(deps: PlatformDeps): OutboxSource<RunWorkflowInput> {
  const runsQueue = taskQueues(deps.config.taskQueuePrefix).runs;
  return {
    name: 'run starts',
    keyOf: (input) => input.trackId,
    due: (limit, skip) =>
      dueRunStarts(deps.pool, {
        queue: runsQueue,
        graceSeconds: WORKFLOW_SWEEP_GRACE_SECONDS,
        limit,
        skip,
      }),
    workflowOf: (input) => ({
      workflowType: 'runWorkflow',
      options: {
        workflowId: runWorkflowId(input.trackId),
        taskQueue: runsQueue,
        args: [input],
        typedSearchAttributes: [
          ...executionSearchAttributes(input.tenantId, 'runs'),
          { key: RUN_STATE, value: 'scheduled' },
        ],
        ...runSummary(input),
      },
    }),
    markStarted: (trackIds) => clearRunInputs(deps.pool, trackIds),
  };
}

/** Starts run workflows off the request path (platform/outbox.ts). */
export function createWorkflowStarter(deps: PlatformDeps) {
  const dispatcher = createOutboxDispatcher(deps, runStarts(deps), {
    retryDelayMaxMs: RUN_START_RETRY_DELAY_MAX_MS,
  });
  return { ...dispatcher, startInBackground: dispatcher.enqueue };
}
export type WorkflowStarter = ReturnType<typeof createWorkflowStarter>;
