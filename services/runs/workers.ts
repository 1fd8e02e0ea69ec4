import type { PlatformDeps } from '../../platform/deps';
import { taskQueues } from '../../contracts/shared/task-queues';
import { countBusyRuns } from '../../db/runs/runs';

/** temporal.api.enums.v1 values (the proto package is not a direct dependency). */
const TASK_QUEUE_KIND_NORMAL = 1;
const TASK_QUEUE_TYPE_ACTIVITY = 2;

/** How long /health waits for Temporal's answer about the Docker hosts. */
export const WORKERS_PROBE_TIMEOUT_MS = 1_000;

export interface WorkersStatus {
  /** Docker hosts polling the any-host queue (distinct worker identities); null if unknown. */
  total: number | null;
  /** Runs holding a host now (pulling, running or paused). */
  busy: number;
}

/**
 * `workers` of /health: hosts are the pollers of the any-host Docker queue (Temporal's
 * DescribeTaskQueue, activity pollers seen in the last minutes); busy is read from Postgres.
 */
export async function workersStatus(deps: PlatformDeps): Promise<WorkersStatus> {
  const busy = countBusyRuns(deps.pool);
  return { total: await pollers(deps), busy: await busy };
}

async function pollers(deps: PlatformDeps): Promise<number | null> {
  // A deadline, not a race: the call (and its retries) ends with the probe.
  return deps.temporal
    .withDeadline(Date.now() + WORKERS_PROBE_TIMEOUT_MS, () =>
      deps.temporal.workflowService.describeTaskQueue({
        namespace: deps.config.temporalNamespace,
        taskQueue: {
          name: taskQueues(deps.config.taskQueuePrefix).runsDockerAnyHost,
          kind: TASK_QUEUE_KIND_NORMAL,
        },
        taskQueueType: TASK_QUEUE_TYPE_ACTIVITY,
      }),
    )
    .then((reply) => new Set((reply.pollers ?? []).map((p) => p.identity)).size)
    .catch(() => null);
}
