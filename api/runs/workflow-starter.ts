import { WorkflowExecutionAlreadyStartedError, WorkflowIdReusePolicy } from '@temporalio/client';
import type { PlatformDeps } from '../platform/service';
import { taskQueues } from '../platform/temporal';
import { sql } from '../../db/pool';
import { executionSearchAttributes, RUN_STATE } from '../../workflows/platform/search-attributes';
import { runWorkflowId, type RunWorkflowInput } from '../../workflows/runs/definitions';

/** How often the sweeper looks for runs whose workflow start is not confirmed. */
export const WORKFLOW_SWEEP_INTERVAL_MS = 2_000;
/** A run younger than this is still being started by the process that stored it. */
export const WORKFLOW_SWEEP_GRACE_SECONDS = 3;
export const WORKFLOW_SWEEP_BATCH = 100;

/**
 * Starts a stored run's workflow (id run/<track_id>, so a second start is refused by Temporal,
 * never duplicated) and clears the run's pending workflow input once Temporal has it.
 * Failures are left for the sweeper.
 */
export async function startRunWorkflow(
  deps: PlatformDeps,
  input: RunWorkflowInput,
): Promise<boolean> {
  try {
    // A bounded call: an unreachable Temporal must not leave retries running past stop().
    await deps.temporal.withDeadline(Date.now() + START_DEADLINE_MS, () =>
      deps.temporal.workflow.start('runWorkflow', {
        workflowId: runWorkflowId(input.trackId),
        taskQueue: taskQueues(deps.config.taskQueuePrefix).runs,
        args: [input],
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        typedSearchAttributes: [
          ...executionSearchAttributes(input.tenantId, 'runs'),
          { key: RUN_STATE, value: 'scheduled' },
        ],
      }),
    );
  } catch (error) {
    if (!(error instanceof WorkflowExecutionAlreadyStartedError)) {
      deps.logger.warn(
        {
          trackId: input.trackId,
          err: (error as Error).message,
          cause: String((error as Error).cause),
        },
        'run workflow not started yet; the sweeper retries',
      );
      return false;
    }
  }
  await deps.pool
    .query(sql.unsafe`UPDATE runs.runs SET workflow_input = NULL WHERE track_id = ${input.trackId}`)
    .catch((error: unknown) =>
      deps.logger.warn({ err: (error as Error).message }, 'run workflow start not recorded'),
    );
  return true;
}

/** Longest a workflow start may take (retries included) before the sweeper takes over. */
export const START_DEADLINE_MS = 5_000;

/** Starts in flight per service instance, so stop() can let them finish before Temporal closes. */
const inFlight = new WeakMap<PlatformDeps, Set<Promise<boolean>>>();
/** How long stop() waits for starts in flight (the sweeper of the next process covers the rest). */
export const START_DRAIN_MAX_MS = 10_000;

/** Starts the workflow without holding the request; see startRunWorkflow. */
export function startRunWorkflowInBackground(deps: PlatformDeps, input: RunWorkflowInput): void {
  const pending = inFlight.get(deps) ?? new Set<Promise<boolean>>();
  inFlight.set(deps, pending);
  const start = startRunWorkflow(deps, input).finally(() => pending.delete(start));
  pending.add(start);
}

async function drainStarts(deps: PlatformDeps): Promise<void> {
  const pending = [...(inFlight.get(deps) ?? [])];
  if (pending.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(pending),
    new Promise((resolve) => {
      timer = setTimeout(resolve, START_DRAIN_MAX_MS);
    }),
  ]);
  clearTimeout(timer);
}

/**
 * The outbox side of submit: every few seconds, starts the workflows of runs (of this process's
 * task queue) whose start was never confirmed, e.g. because the API process died after the
 * commit or Temporal was unreachable.
 */
export function createWorkflowSweeper(deps: PlatformDeps) {
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> | null = null;
  const sweep = (): Promise<void> => {
    current ??= sweepOnce().finally(() => {
      current = null;
    });
    return current;
  };
  const sweepOnce = async () => {
    try {
      const pending = (await deps.pool.anyFirst(sql.unsafe`
        SELECT workflow_input FROM runs.runs
        WHERE workflow_input IS NOT NULL AND workflow_task_queue = ${taskQueues(deps.config.taskQueuePrefix).runs}
          AND submitted_at < now() - make_interval(secs => ${WORKFLOW_SWEEP_GRACE_SECONDS})
        ORDER BY submitted_at LIMIT ${WORKFLOW_SWEEP_BATCH}`)) as RunWorkflowInput[];
      for (const input of pending) await startRunWorkflow(deps, input);
    } catch (error) {
      deps.logger.warn({ err: (error as Error).message }, 'workflow sweep failed');
    }
  };
  return {
    start(): void {
      timer = setInterval(() => void sweep(), WORKFLOW_SWEEP_INTERVAL_MS);
      timer.unref();
    },
    async stop(): Promise<void> {
      clearInterval(timer);
      await Promise.all([current, drainStarts(deps)]);
    },
    sweep,
  };
}
