import { ApplicationFailure } from '@temporalio/activity';
import { sql, type DatabasePool } from '../../db/pool';
import { transitionRun, type Transition } from '../../db/runs/runs';
import { taskQueues } from '../../workflows/platform/task-queues';
import type { RunWorkflowInput } from '../../workflows/runs/definitions';
import type { LaunchedContainer } from './run-docker';

export interface ClaimedHost {
  workerId: string;
  /** The task queue of this host's Docker activities. */
  taskQueue: string;
}

/** What claimAndLaunchRun answers: the host, and the container or why there is none. */
export interface ClaimedLaunch {
  host: ClaimedHost;
  /** Set when this host started the container and recorded `running`. */
  containerId: string | null;
  /** A run launched before this claim (a retry, or a reset workflow) may be paused. */
  state?: 'running' | 'paused';
  /** A launch that cannot succeed (image not pulled, container not started): its type and text. */
  failure: { type: string; message: string } | null;
}

/** The pull-create-start-record step of run-docker.ts (launchRunContainer), on this host. */
export type LaunchOnThisHost = (input: {
  run: RunWorkflowInput;
  transition: Omit<Transition, 'fields'>;
}) => Promise<LaunchedContainer>;

/**
 * Runs on the any-host Docker queue: whichever host picks it up owns the work from then on,
 * and every later Docker activity goes to that host's own queue. That is how a container is
 * always driven by the worker on its machine (Temporal's worker-specific task queue pattern).
 */
export function createHostClaimActivities(deps: {
  workerId: string;
  taskQueuePrefix: string;
  pool: DatabasePool;
  launch: LaunchOnThisHost;
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
      return claim(input.transition);
    },

    /**
     * The claim (queued → pulling, worker_id = this host) and the launch (pull, create, start,
     * pulling → running) in ONE activity on the any-host queue: a run's first host round trip
     * does all of it. A retry that lands on another host after the claim committed answers the
     * claiming host without a container; the workflow then launches on that host's own queue.
     * A launch that cannot succeed is answered, not thrown, so the workflow knows the host
     * that must clean up.
     */
    async claimAndLaunchRun(input: {
      run: RunWorkflowInput;
      claim: Omit<Transition, 'fields'>;
      launch: Omit<Transition, 'fields'>;
    }): Promise<ClaimedLaunch> {
      const claimed = await claim(input.claim);
      if (claimed.workerId !== deps.workerId)
        return { host: claimed, containerId: null, failure: null };
      try {
        const launched = await deps.launch({ run: input.run, transition: input.launch });
        return { host: claimed, ...launched, failure: null };
      } catch (error) {
        if (!(error instanceof ApplicationFailure) || !error.nonRetryable) throw error;
        return {
          host: claimed,
          containerId: null,
          failure: { type: error.type ?? 'StartFailed', message: error.message },
        };
      }
    },
  };

  /**
   * queued → pulling with worker_id = this host; a committed earlier claim wins, be it this
   * activity's earlier attempt or the claim of an execution an operator has since reset.
   */
  async function claim(transition: Omit<Transition, 'fields'>): Promise<ClaimedHost> {
    const claimed = host();
    const outcome = await transitionRun(deps.pool, {
      ...transition,
      fields: { worker_id: claimed.workerId },
    });
    if (outcome === 'applied') return claimed;
    // Claimed before (maybe on another host): that host owns the run.
    const workerId = (await deps.pool.maybeOneFirst(sql.unsafe`
      SELECT worker_id FROM runs.runs WHERE track_id = ${transition.trackId}`)) as string | null;
    return workerId === null || workerId === claimed.workerId
      ? claimed
      : { workerId, taskQueue: taskQueues(deps.taskQueuePrefix).runsDockerHost(workerId) };
  }
}
export type HostClaimActivities = ReturnType<typeof createHostClaimActivities>;
