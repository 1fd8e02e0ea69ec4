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
export function createHostClaimActivities(deps: { workerId: string; taskQueuePrefix: string }) {
  return {
    // eslint-disable-next-line @typescript-eslint/require-await
    async claimDockerHost(): Promise<ClaimedHost> {
      return {
        workerId: deps.workerId,
        taskQueue: taskQueues(deps.taskQueuePrefix).runsDockerHost(deps.workerId),
      };
    },
  };
}
export type HostClaimActivities = ReturnType<typeof createHostClaimActivities>;
