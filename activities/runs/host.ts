import { sql, type DatabasePool } from '../../db/pool';
import { transitionRun, type Transition } from '../../db/runs/runs';
import { taskQueues } from '../../workflows/platform/task-queues';

export interface ClaimedHost {
  workerId: string;
  /** The task queue of this host's Docker activities. */
  taskQueue: string;
}

/**
 * Runs on the any-host Docker queue: whichever host picks it up owns the work from then on,
 * and every later Docker activity goes to that host's own queue. That is how a container is
 * always driven by the worker on its machine (Temporal's worker-specific task queue pattern).
 */
export function createHostClaimActivities(deps: {
  workerId: string;
  taskQueuePrefix: string;
  pool: DatabasePool;
}) {
  const host = (): ClaimedHost => ({
    workerId: deps.workerId,
    taskQueue: taskQueues(deps.taskQueuePrefix).runsDockerHost(deps.workerId),
  });
  return {
    // eslint-disable-next-line @typescript-eslint/require-await
    async claimDockerHost(): Promise<ClaimedHost> {
      return host();
    },

    /**
     * The claim and the run's queued → pulling change (worker_id = this host) in one activity,
     * one Temporal round trip fewer per run. Idempotent: the transition is keyed by the event
     * id the workflow made; a retry that finds it committed answers the host recorded then.
     */
    async claimDockerHostForRun(input: {
      transition: Omit<Transition, 'fields'>;
    }): Promise<ClaimedHost> {
      const claimed = host();
      const outcome = await transitionRun(deps.pool, {
        ...input.transition,
        fields: { worker_id: claimed.workerId },
      });
      if (outcome !== 'already_applied') return claimed;
      // An earlier attempt (maybe on another host) committed: that host owns the run.
      const workerId = (await deps.pool.maybeOneFirst(sql.unsafe`
        SELECT worker_id FROM runs.runs WHERE track_id = ${input.transition.trackId}`)) as
        string | null;
      return workerId === null || workerId === claimed.workerId
        ? claimed
        : {
            workerId,
            taskQueue: taskQueues(deps.taskQueuePrefix).runsDockerHost(workerId),
          };
    },
  };
}
export type HostClaimActivities = ReturnType<typeof createHostClaimActivities>;
