import {
  ActivityFailure,
  ApplicationFailure,
  proxyActivities,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { ClaimedLaunch, HostClaimActivities } from '../../activities/runs/host';
import type { RunDockerActivities } from '../../activities/runs/run-docker';
import { dockerCallProfile } from '../shared/activity-profiles';
import type { Transition } from '../../contracts/runs/run';
import {
  failureMessage,
  type RunDockerProxy,
  type RunExecution,
  type TerminalChange,
} from './run-execution';

/**
 * Claim and launch on the any-host queue: waits there (like the claim alone) until some Docker
 * worker is alive, then runs as long as a launch may (like dockerCallProfile); attempts count
 * only once a host has started it.
 */
const claimAndLaunchProfile: ActivityOptions = {
  ...dockerCallProfile,
  scheduleToCloseTimeout: '12 minutes',
};

/**
 * Following a container lasts as long as the run (paused time included), so the activity is
 * bounded by its heartbeat, not by its duration: a dead worker is noticed within the heartbeat
 * timeout and the activity retried on the same host's queue, where it re-attaches.
 */
const followProfile: ActivityOptions = {
  startToCloseTimeout: '3650 days',
  heartbeatTimeout: '15 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '5 seconds',
    nonRetryableErrorTypes: ['ContainerLost'],
  },
};

/** Why a launch failed, as the run's failed event says it. */
export interface LaunchFailure {
  reason: 'image_pull_failed' | 'start_failed';
  message: string;
}

/** A launched run's follow activity (on its host's queue), or why the launch failed. */
export type Launched = { follower: RunDockerProxy } | { failed: LaunchFailure };

/**
 * queued → pulling → running, in one activity on the any-host queue: whichever host takes it
 * claims the run (records `pulling`), pulls, starts and records `running`; from then on the run
 * belongs to that host's own queue (run.docker). A run launched before (a retried claim, a reset
 * execution) is answered with its container and its state, running or paused.
 */
export async function claimAndLaunch(run: RunExecution): Promise<Launched> {
  // Claimed from queued: the slot it took, or a row past scheduled that it claims again.
  run.state = 'queued';
  const claim = run.transitionTo('pulling', 'run.pulling', null);
  const launch = launchTransition(run);
  let launched: ClaimedLaunch;
  try {
    launched = await anyHostOf(run).claimAndLaunchRun({ run: run.input, claim, launch });
  } catch (error) {
    return noHostAnswered(run, claim, error);
  }
  const follower = claimedBy(run, launched.host.taskQueue);
  if (launched.failure) {
    const { type, message } = launched.failure;
    return { failed: { reason: launchFailureReason(type), message } };
  }
  if (launched.containerId === null) return launchOnClaimingHost(run, launch, follower);
  run.applied(launched.state ?? 'running');
  return { follower };
}

/** pulling → running, made by the run's workflow once its host has claimed it. */
export function launchTransition(run: RunExecution): Omit<Transition, 'fields'> {
  return { ...run.transitionTo('running', 'run.running', null), from: 'pulling' as const };
}

/** An earlier attempt's host claimed the run: the launch happens on that host's queue. */
export async function launchOnClaimingHost(
  run: RunExecution,
  launch: Omit<Transition, 'fields'>,
  follower: RunDockerProxy,
): Promise<Launched> {
  try {
    const container = await run.docker!.launchRunContainer({ run: run.input, transition: launch });
    run.applied(container.state ?? 'running');
    return { follower };
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    const type = error.cause instanceof ApplicationFailure ? error.cause.type : null;
    return { failed: { reason: launchFailureReason(type), message: failureMessage(error) } };
  }
}

/** No host answered the launch: the host that claimed the run (or claims it now) cleans up. */
export async function noHostAnswered(
  run: RunExecution,
  claim: Omit<Transition, 'fields'>,
  error: unknown,
): Promise<Launched> {
  if (!(error instanceof ActivityFailure)) throw error;
  const host = await anyHostOf(run).claimDockerHostForRun({ transition: claim });
  claimedBy(run, host.taskQueue);
  return { failed: { reason: 'start_failed', message: failureMessage(error) } };
}

/** A failed launch ends the run failed; its host removes what it made, gives the slot back. */
export async function failLaunch(
  run: RunExecution,
  failed: LaunchFailure,
): Promise<TerminalChange> {
  const fields = { finished_at: 'now' as const };
  const t = run.transitionTo('failed', 'run.failed', failed.reason, fields, {
    error: failed.message,
  });
  return { recorded: await run.finish(t, 0), own: { state: 'failed', exitCode: null } };
}

/** The run is in pulling on the host of this queue: its Docker calls go there from now on. */
export function claimedBy(run: RunExecution, taskQueue: string): RunDockerProxy {
  run.state = 'pulling';
  run.useHostQueue(taskQueue);
  return followerOn(taskQueue);
}

/** The follow activity on a host's queue. */
export const followerOn = (taskQueue: string): RunDockerProxy =>
  proxyActivities<RunDockerActivities>({ ...followProfile, taskQueue });

export function launchFailureReason(type: string | null | undefined): LaunchFailure['reason'] {
  return type === 'ImageNotFound' ? 'image_pull_failed' : 'start_failed';
}

const anyHostOf = (run: RunExecution) =>
  proxyActivities<HostClaimActivities>({
    ...claimAndLaunchProfile,
    taskQueue: run.input.dockerAnyHostQueue,
  });
