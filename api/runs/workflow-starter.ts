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
/** Longest a workflow start may take (retries included) before the sweeper takes over. */
export const START_DEADLINE_MS = 5_000;
/** How long stop() waits for starts in flight (the sweeper of the next process covers the rest). */
export const START_DRAIN_MAX_MS = 10_000;
/**
 * Workflow starts in flight per API process. Temporal takes starts at its own pace (the local
 * dev server on SQLite: ~50/s, one after another); more parallel calls only make each slower,
 * time out and burn the API's CPU, so the rest wait in the queue below.
 */
export const START_CONCURRENCY = 8;
/** Past this many waiting starts, new ones are left to the sweeper (the row has the input). */
export const START_QUEUE_MAX = 5_000;
/** Confirmed starts are cleared from their rows in one UPDATE this often. */
export const CONFIRM_FLUSH_MS = 200;

/**
 * Starts run workflows off the request path, in the API process: submit stores the run with
 * its workflow input (the outbox) and hands it here; a bounded queue starts the workflows
 * (id run/<track_id>, so a second start is refused by Temporal, never duplicated) and clears
 * the input of confirmed ones in batches. A sweeper starts any run whose start was never
 * confirmed (API died after the commit, Temporal unreachable, queue full).
 */
export function createWorkflowStarter(deps: PlatformDeps) {
  const queue: RunWorkflowInput[] = [];
  /** Track ids queued or in flight here: the sweeper leaves them alone. */
  const pending = new Set<string>();
  const inFlight = new Set<Promise<void>>();
  let confirmed: string[] = [];
  let flushTimer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();
  let sweepTimer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> | null = null;
  let stopped = false;
  const runsQueue = taskQueues(deps.config.taskQueuePrefix).runs;

  /** Starts one workflow; true when Temporal has it (started now or before). */
  const startOne = async (input: RunWorkflowInput): Promise<boolean> => {
    try {
      // A bounded call: an unreachable Temporal must not leave retries running past stop().
      await deps.temporal.withDeadline(Date.now() + START_DEADLINE_MS, () =>
        deps.temporal.workflow.start('runWorkflow', {
          workflowId: runWorkflowId(input.trackId),
          taskQueue: runsQueue,
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
    confirm(input.trackId);
    return true;
  };

  const confirm = (trackId: string) => {
    confirmed.push(trackId);
    flushTimer ??= setTimeout(() => void flush(), CONFIRM_FLUSH_MS);
  };
  /** Clears the workflow input of every confirmed run in one statement. */
  const flush = (): Promise<void> => {
    clearTimeout(flushTimer);
    flushTimer = undefined;
    const ids = confirmed;
    confirmed = [];
    if (ids.length === 0) return flushing;
    flushing = flushing.then(() =>
      deps.pool
        .query(
          sql.unsafe`UPDATE runs.runs SET workflow_input = NULL WHERE track_id = ANY(${sql.array(ids, 'text')})`,
        )
        .then(
          () => undefined,
          // Not fatal: the sweeper starts them again and Temporal answers "already started".
          (error: unknown) =>
            deps.logger.warn({ err: (error as Error).message }, 'run workflow starts not recorded'),
        ),
    );
    return flushing;
  };

  const pump = () => {
    while (!stopped && inFlight.size < START_CONCURRENCY && queue.length > 0) {
      const input = queue.shift()!;
      const started: Promise<void> = startOne(input)
        .catch(() => false)
        .then(() => {
          pending.delete(input.trackId);
          inFlight.delete(started);
          pump();
        });
      inFlight.add(started);
    }
  };

  const enqueue = (input: RunWorkflowInput): void => {
    if (stopped || pending.has(input.trackId) || queue.length >= START_QUEUE_MAX) return;
    pending.add(input.trackId);
    queue.push(input);
    pump();
  };

  const sweepOnce = async () => {
    try {
      const rows = (await deps.pool.anyFirst(sql.unsafe`
        SELECT workflow_input FROM runs.runs
        WHERE workflow_input IS NOT NULL AND workflow_task_queue = ${runsQueue}
          AND submitted_at < now() - make_interval(secs => ${WORKFLOW_SWEEP_GRACE_SECONDS})
          AND NOT (track_id = ANY(${sql.array([...pending], 'text')}))
        ORDER BY submitted_at LIMIT ${WORKFLOW_SWEEP_BATCH}`)) as RunWorkflowInput[];
      for (const input of rows) enqueue(input);
    } catch (error) {
      deps.logger.warn({ err: (error as Error).message }, 'workflow sweep failed');
    }
  };

  const sweep = (): Promise<void> => {
    sweeping ??= sweepOnce().finally(() => {
      sweeping = null;
    });
    return sweeping;
  };

  return {
    /** Queues the start without holding the request (see the module comment). */
    startInBackground: enqueue,
    sweep,
    start(): void {
      sweepTimer = setInterval(() => void sweep(), WORKFLOW_SWEEP_INTERVAL_MS);
      sweepTimer.unref();
    },
    /** Lets the starts in flight finish (boundedly) and records them; the queue is left. */
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(sweepTimer);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...inFlight, sweeping]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, START_DRAIN_MAX_MS);
        }),
      ]);
      clearTimeout(timer);
      await flush();
    },
  };
}
export type WorkflowStarter = ReturnType<typeof createWorkflowStarter>;
