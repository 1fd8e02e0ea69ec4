import { ApplicationFailure, Context } from '@temporalio/activity';
import type { DatabasePool } from '../../db/pool';
import { findRunWorkerId, transitionRun, type Transition } from '../../db/runs/runs';
import { taskQueues } from '../../contracts/shared/task-queues';
import type { RunWorkflowInput } from '../../contracts/runs/run';
import type { ContainerOutcome, LaunchedContainer } from './run-docker';

export interface ClaimedHost {
  workerId: string;
  /** The task queue of this host's Docker activities. */
  taskQueue: string;
}

/** A run handed to the hosts: its input, and the two changes its launch records. */
export interface HandOff {
  run: RunWorkflowInput;
  /** queued → pulling, with this host as the run's. */
  claim: Omit<Transition, 'fields'>;
  /** pulling → running, with the container and its start. */
  launch: Omit<Transition, 'fields'>;
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

/** The follow step of run-docker.ts (followRunContainer), on this host. */
export type FollowOnThisHost = (input: {
  trackId: string;
  tenantId: string;
  memoryLimitMb: number;
  removeOnExit: true;
}) => Promise<ContainerOutcome>;

/** What claimLaunchAndFollowRun answers. */
export interface RunFollowedToEnd {
  host: ClaimedHost;
  /** An earlier attempt's host claimed the run: it is launched and followed on that host. */
  handedOver: boolean;
  /** A launch that cannot succeed: its type and text (the run is still `pulling`). */
  failure: { type: string; message: string } | null;
  /** When the container started (epoch ms): the refund counts the seconds from here. */
  startedAtMs: number | null;
  /**
   * The state the launch left the row in: running, or paused for a run launched before and
   * found paused. Only the workflow changes it after that, once it has seen the launch.
   */
  launchedState: 'running' | 'paused' | null;
  outcome: ContainerOutcome | null;
  /** Why the container could not be followed to its end (it is gone): the run failed. */
  followFailure: string | null;
}

/** A launch's tries before its failure is answered (a pull or start that keeps failing). */
export const LAUNCH_ATTEMPTS = 10;
/** One launch try's bound: a Docker call that hangs is abandoned and the try made again. */
export const LAUNCH_TRY_MS = 2 * 60_000;
const HEARTBEAT_INTERVAL_MS = 2_000;

/** A launch that cannot succeed: its type and text. */
type LaunchFailure = { type: string; message: string };

/** What the host claim activities need: this host, the runs table, and its Docker steps. */
interface HostClaimDeps {
  workerId: string;
  taskQueuePrefix: string;
  pool: DatabasePool;
  launch: LaunchOnThisHost;
  follow: FollowOnThisHost;
}

/**
 * Runs on the any-host Docker queue: whichever host picks it up owns the work from then on,
 * and every later Docker activity goes to that host's own queue. That is how a container is
 * always driven by the worker on its machine (Temporal's worker-specific task queue pattern).
 */
export function createHostClaimActivities(deps: HostClaimDeps) {
  return {
    // eslint-disable-next-line @typescript-eslint/require-await
    async claimDockerHost(): Promise<ClaimedHost> {
      return hostOf(deps.taskQueuePrefix, deps.workerId);
    },

    /**
     * The claim and the run's queued → pulling change (worker_id = this host) in one activity,
     * one Temporal round trip fewer per run. Idempotent: the transition is keyed by the event
     * id the workflow made; a retry that finds it committed answers the host recorded then.
     */
    async claimDockerHostForRun(input: {
      transition: Omit<Transition, 'fields'>;
    }): Promise<ClaimedHost> {
      return claimRun(deps, input.transition);
    },

    /**
     * The claim (queued → pulling, worker_id = this host) and the launch (pull, create, start,
     * pulling → running) in ONE activity on the any-host queue: a run's first host round trip
     * does all of it. A retry that lands on another host after the claim committed answers the
     * claiming host without a container; the workflow then launches on that host's own queue.
     * A launch that cannot succeed is answered, not thrown, so the workflow knows the host
     * that must clean up.
     */
    async claimAndLaunchRun(input: HandOff): Promise<ClaimedLaunch> {
      return claimAndLaunchRun(deps, input);
    },

    /**
     * A run from its claim to its container's end in ONE activity on the any-host queue:
     * claim, launch (as claimAndLaunchRun), then follow the container to its exit on this host
     * (as followRunContainer, which removes it). The workflow pays one activity and no
     * workflow task between the launch and the end; it reads the row (readRunLaunch) if it must
     * act on the container before then. Heartbeats throughout, so a dead host is noticed and
     * the activity retried: on this host (restarted) it re-attaches; on another it answers
     * handedOver, and the claiming host follows it on its own queue.
     */
    async claimLaunchAndFollowRun(input: HandOff): Promise<RunFollowedToEnd> {
      return claimLaunchAndFollowRun(deps, input);
    },
  };
}
export type HostClaimActivities = ReturnType<typeof createHostClaimActivities>;

/** A host and the task queue of its own Docker activities. */
function hostOf(taskQueuePrefix: string, workerId: string): ClaimedHost {
  return { workerId, taskQueue: taskQueues(taskQueuePrefix).runsDockerHost(workerId) };
}

async function claimAndLaunchRun(deps: HostClaimDeps, input: HandOff): Promise<ClaimedLaunch> {
  const claimed = await claimRun(deps, input.claim);
  if (claimed.workerId !== deps.workerId)
    return { host: claimed, containerId: null, failure: null };
  try {
    const launched = await deps.launch({ run: input.run, transition: input.launch });
    return { host: claimed, ...launched, failure: null };
  } catch (error) {
    if (!(error instanceof ApplicationFailure) || !error.nonRetryable) throw error;
    return { host: claimed, containerId: null, failure: launchFailureOf(error) };
  }
}

async function claimLaunchAndFollowRun(
  deps: HostClaimDeps,
  input: HandOff,
): Promise<RunFollowedToEnd> {
  const claimed = await claimRun(deps, input.claim);
  const none: RunFollowedToEnd = {
    host: claimed,
    handedOver: false,
    failure: null,
    startedAtMs: null,
    launchedState: null,
    outcome: null,
    followFailure: null,
  };
  if (claimed.workerId !== deps.workerId) return { ...none, handedOver: true };
  return whileHeartbeating(() => launchAndFollowToEnd(deps, input, none));
}

/**
 * Heartbeats while `work` runs: a launch and follow can take as long as the run, and the
 * heartbeat timeout is how Temporal notices that this host died under it.
 */
async function whileHeartbeating<T>(work: () => Promise<T>): Promise<T> {
  const heartbeat = setInterval(() => Context.current().heartbeat(), HEARTBEAT_INTERVAL_MS);
  try {
    return await work();
  } finally {
    clearInterval(heartbeat);
  }
}

/** The launch on this host, then the container followed to its end; `none` is what is known yet. */
async function launchAndFollowToEnd(
  deps: HostClaimDeps,
  input: HandOff,
  none: RunFollowedToEnd,
): Promise<RunFollowedToEnd> {
  const launched = await launchOrFailure(deps, input);
  if ('failure' in launched) return { ...none, failure: launched.failure };
  const { trackId, tenantId, memoryLimitMb } = input.run;
  const followed = {
    ...none,
    startedAtMs: launched.startedAtMs ?? Date.now(),
    launchedState: launched.state ?? 'running',
  };
  try {
    const outcome = await deps.follow({ trackId, tenantId, memoryLimitMb, removeOnExit: true });
    return { ...followed, outcome };
  } catch (error) {
    // Answered, not thrown: the answer keeps what the launch recorded (its start, its state).
    if (!(error instanceof ApplicationFailure) || error.type !== 'ContainerLost') throw error;
    return { ...followed, followFailure: error.message };
  }
}

/**
 * The launch of claimLaunchAndFollowRun, bounded per try; a failure that no retry can mend
 * (or the last try's) is answered, so the workflow knows the host that must clean up.
 */
async function launchOrFailure(
  deps: HostClaimDeps,
  input: HandOff,
): Promise<LaunchedContainer | { failure: LaunchFailure }> {
  try {
    return await launchWithinTryBound(deps, input);
  } catch (error) {
    const final = error instanceof ApplicationFailure && error.nonRetryable;
    if (!final && Context.current().info.attempt < LAUNCH_ATTEMPTS) throw error;
    return { failure: launchFailureOf(error) };
  }
}

/** One launch try, failed past LAUNCH_TRY_MS: a Docker call that hangs is abandoned. */
async function launchWithinTryBound(
  deps: HostClaimDeps,
  input: HandOff,
): Promise<LaunchedContainer> {
  let bound: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    bound = setTimeout(
      () => reject(new Error(`the launch did not finish within ${LAUNCH_TRY_MS} ms`)),
      LAUNCH_TRY_MS,
    );
  });
  const launching = deps.launch({ run: input.run, transition: input.launch });
  // A try abandoned past its bound may still fail later: that failure is nobody's to answer.
  launching.catch(() => undefined);
  try {
    return await Promise.race([launching, timedOut]);
  } finally {
    clearTimeout(bound);
  }
}

/** A launch failure as the workflow is told it: its type (StartFailed when untyped) and text. */
function launchFailureOf(error: unknown): LaunchFailure {
  const type = error instanceof ApplicationFailure ? (error.type ?? 'StartFailed') : 'StartFailed';
  return { type, message: (error as Error).message };
}

/**
 * queued → pulling with worker_id = this host; a committed earlier claim wins, be it this
 * activity's earlier attempt or the claim of an execution an operator has since reset.
 */
async function claimRun(
  deps: HostClaimDeps,
  transition: Omit<Transition, 'fields'>,
): Promise<ClaimedHost> {
  const claimed = hostOf(deps.taskQueuePrefix, deps.workerId);
  const outcome = await transitionRun(deps.pool, {
    ...transition,
    fields: { worker_id: claimed.workerId },
  });
  if (outcome === 'applied') return claimed;
  // Claimed before (maybe on another host): that host owns the run.
  const workerId = await findRunWorkerId(deps.pool, transition.trackId);
  return workerId === null || workerId === claimed.workerId
    ? claimed
    : hostOf(deps.taskQueuePrefix, workerId);
}
