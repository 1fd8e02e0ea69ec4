import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { DatabasePool } from '../../db/pool';
import {
  dockerHostKey,
  dockerHostsSilentSeconds,
  type DockerHost,
} from '../../db/runs/docker-hosts';
import { activeRunsPage, eventStored, type ActiveRunRow } from '../../db/runs/reconcile';
import { transitionRun, type RunState, type TransitionOutcome } from '../../db/runs/runs';
import { taskQueues, type TaskQueues } from '../../contracts/shared/task-queues';
import { runWorkflowId } from '../../contracts/runs/run';
import { RECONCILE_REASONS, type ReconcileReason } from '../../contracts/runs/reconcile';
import { settleRunSeconds, wakeWaitingRuns, type RunEndDeps } from './run';

/** A run whose row is active while its workflow is closed or gone (see runsReconcileWorkflow). */
export interface StaleRun {
  trackId: string;
  tenantId: string;
  /** The state read from the row: the repair's transition is conditional on it. */
  from: RunState;
  reason: ReconcileReason;
  /** Temporal's status of run/<track_id> (NOT_FOUND when there is none). */
  workflowStatus: string;
  workflowRunId: string | null;
  workflowClosedAt: string | null;
  workerId: string | null;
  /** The Docker queue of the run's host, when a worker polls it; null: nothing to reach. */
  hostQueue: string | null;
  metered: boolean;
  /** Running seconds to keep charged: started_at until the workflow closed (or now). */
  usedSeconds: number;
  tierConcurrentRuns: number | null;
}

export type ReconcileOutcome = TransitionOutcome | 'still_open';

/** A running or paused run whose host has been silent past the grace (see hostLostSignal). */
export interface LostHostRun {
  trackId: string;
  workerId: string;
  silentSeconds: number;
}

/** Describes of workflows in flight per activity (Temporal answers them from persistence). */
const DESCRIBE_CONCURRENCY = 16;
/** temporal.api.enums.v1 values (the proto package is not a direct dependency). */
const TASK_QUEUE_KIND_NORMAL = 1;
const TASK_QUEUE_TYPE_ACTIVITY = 2;

type Described = { status: 'NOT_FOUND' } | { status: string; runId: string; closedAt: Date | null };

const CLOSED_REASONS: Record<string, ReconcileReason> = {
  TERMINATED: RECONCILE_REASONS.TERMINATED,
  FAILED: RECONCILE_REASONS.FAILED,
  TIMED_OUT: RECONCILE_REASONS.TIMED_OUT,
  CANCELLED: RECONCILE_REASONS.CANCELLED,
  COMPLETED: RECONCILE_REASONS.COMPLETED,
};

/**
 * The reconciler's activities (runs queue): they read Postgres and describe workflows with
 * the worker's Temporal client. The run's container is removed by the host activity
 * removeRunContainer on the run's own host queue (run-docker.ts).
 */
export function createReconcileActivities(deps: RunEndDeps) {
  return {
    /**
     * One page of active runs, each checked against Temporal's describe of run/<track_id>.
     * Stale: the execution is closed (longer than closedGraceSeconds ago), or it does not
     * exist and the row has not changed for missingGraceSeconds. RUNNING, PAUSED and
     * CONTINUED_AS_NEW (describe by id follows to the newest run) are left alone.
     */
    async findStaleRuns(input: {
      afterTrackId: string;
      limit: number;
      closedGraceSeconds: number;
      missingGraceSeconds: number;
      hostLostGraceSeconds: number;
      tenantId: string | null;
    }): Promise<{
      scanned: number;
      stale: StaleRun[];
      onLostHosts: LostHostRun[];
      nextAfterTrackId: string | null;
    }> {
      const client = Context.current().client;
      const rows = await activeRunsPage(deps.pool, input);
      const described = await mapBounded(rows, DESCRIBE_CONCURRENCY, (row) =>
        describe(client, row.track_id),
      );
      const now = Date.now();
      const stale = rows.flatMap((row, i) => staleRunOf(row, described[i]!, input, now) ?? []);
      await sendToLiveHosts(client, stale, rows);
      const running = rows.filter((row, i) => described[i]!.status === 'RUNNING');
      return {
        scanned: rows.length,
        stale,
        onLostHosts: await runsOnLostHosts(deps.pool, running, input.hostLostGraceSeconds),
        nextAfterTrackId: rows.length < input.limit ? null : rows[rows.length - 1]!.track_id,
      };
    },

    /**
     * Fails one stale run through transitionRun (row + event, one transaction, conditional on
     * the state that was read), then settles a metered run's seconds and wakes the tenant's waiting
     * runs, as a normal end does. The workflow is described again just before: an operator
     * may have reset it since the page was read. Idempotent: the event id is the workflow's.
     */
    async failStaleRun(input: { run: StaleRun; eventId: string }): Promise<ReconcileOutcome> {
      const { run } = input;
      if (!(await eventStored(deps.pool, input.eventId))) {
        const now = await describe(Context.current().client, run.trackId);
        if (now.status !== 'NOT_FOUND' && CLOSED_REASONS[now.status] === undefined)
          return 'still_open';
      }
      const outcome = await transitionRun(deps.pool, {
        trackId: run.trackId,
        eventId: input.eventId,
        from: run.from,
        to: 'failed',
        eventType: 'run.failed',
        reason: run.reason,
        payload: {
          reconciled: true,
          workflow_status: run.workflowStatus,
          workflow_run_id: run.workflowRunId,
          workflow_closed_at: run.workflowClosedAt,
        },
        fields: { finished_at: 'now' },
      });
      if (outcome === 'conflict') return outcome;
      if (run.metered)
        await settleRunSeconds(deps, { trackId: run.trackId, usedSeconds: run.usedSeconds });
      await wakeWaitingRuns(deps.pool, {
        tenantId: run.tenantId,
        maxConcurrent: run.tierConcurrentRuns,
      }).catch(() => 0);
      return outcome;
    },
  };
}
export type ReconcileActivities = ReturnType<typeof createReconcileActivities>;

/** A run whose execution is closed past its grace, or missing past its own; null otherwise. */
function staleRunOf(
  row: ActiveRunRow,
  d: Described,
  grace: { closedGraceSeconds: number; missingGraceSeconds: number },
  now: number,
): StaleRun | null {
  let reason: ReconcileReason;
  let closedAt: Date | null = null;
  if (d.status === 'NOT_FOUND') {
    if (row.idle_seconds < grace.missingGraceSeconds) return null;
    reason = RECONCILE_REASONS.MISSING;
  } else {
    const closed = CLOSED_REASONS[d.status];
    if (closed === undefined) return null;
    closedAt = 'closedAt' in d ? d.closedAt : null;
    if (closedAt !== null && now - closedAt.getTime() < grace.closedGraceSeconds * 1000)
      return null;
    reason = closed;
  }
  const endMs = closedAt?.getTime() ?? now;
  return {
    trackId: row.track_id,
    tenantId: row.tenant_id,
    from: row.state,
    reason,
    workflowStatus: d.status,
    workflowRunId: 'runId' in d ? d.runId : null,
    workflowClosedAt: closedAt?.toISOString() ?? null,
    workerId: row.worker_id,
    hostQueue: null,
    metered: row.metered,
    usedSeconds:
      row.started_at === null ? 0 : Math.max(0, (endMs - Date.parse(row.started_at)) / 1000),
    tierConcurrentRuns: row.tier_concurrent_runs,
  };
}

/** Each stale run's host queue, only where some worker still polls it (else a task would wait). */
async function sendToLiveHosts(client: Client, stale: StaleRun[], rows: readonly ActiveRunRow[]) {
  const hosts = new Map<string, boolean>();
  for (const run of stale) {
    const queue = hostQueueOf(rows.find((r) => r.track_id === run.trackId)!);
    if (queue === null) continue;
    if (!hosts.has(queue)) hosts.set(queue, await hasPollers(client, queue));
    if (hosts.get(queue)) run.hostQueue = queue;
  }
}

async function describe(client: Client, trackId: string): Promise<Described> {
  try {
    const d = await client.workflow.getHandle(runWorkflowId(trackId)).describe();
    return { status: d.status.name, runId: d.runId, closedAt: d.closeTime ?? null };
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return { status: 'NOT_FOUND' };
    throw error;
  }
}

/** The host queue the run's own workflow used: its task queue's prefix and its worker_id. */
function hostQueueOf(row: ActiveRunRow): string | null {
  const host = hostOf(row);
  return host === null ? null : host.queues.runsDockerHost(host.workerId);
}

/** The run's host as it announces itself (docker_hosts), and its deployment's queues. */
function hostOf(row: ActiveRunRow): (DockerHost & { queues: TaskQueues }) | null {
  const runsQueue = row.workflow_task_queue;
  if (row.worker_id === null || runsQueue === null || !runsQueue.endsWith('runs')) return null;
  const queues = taskQueues(runsQueue.slice(0, -'runs'.length));
  return { anyHostQueue: queues.runsDockerAnyHost, workerId: row.worker_id, queues };
}

/**
 * Running or paused runs (their workflows open) whose host was last seen longer than the grace
 * ago. A host with no row withdrew on a clean stop and may be restarting: it is not judged.
 */
async function runsOnLostHosts(
  pool: DatabasePool,
  rows: ActiveRunRow[],
  graceSeconds: number,
): Promise<LostHostRun[]> {
  const followed = rows.flatMap((row) => {
    const host = row.state === 'running' || row.state === 'paused' ? hostOf(row) : null;
    return host === null ? [] : [{ row, host }];
  });
  const silence = await dockerHostsSilentSeconds(
    pool,
    followed.map((f) => f.host),
  );
  return followed.flatMap(({ row, host }) => {
    const silentSeconds = silence.get(dockerHostKey(host));
    if (silentSeconds === undefined || silentSeconds <= graceSeconds) return [];
    return [{ trackId: row.track_id, workerId: host.workerId, silentSeconds }];
  });
}

async function hasPollers(client: Client, queue: string): Promise<boolean> {
  const reply = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: queue, kind: TASK_QUEUE_KIND_NORMAL },
    taskQueueType: TASK_QUEUE_TYPE_ACTIVITY,
  });
  return (reply.pollers ?? []).length > 0;
}

async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
