import { condition, proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { HostClaimActivities, RunFollowedToEnd } from '../../activities/runs/host';
import { NON_RETRYABLE } from '../shared/activity-profiles';
import type { RunExecution } from './run-execution';
import { enforceRunTimeout, untilNoPauseOrResumeInFlight } from './run-follow';
import {
  claimedBy,
  followerOn,
  launchFailureReason,
  launchOnClaimingHost,
  launchTransition,
  noHostAnswered,
  type Launched,
} from './run-launch';

/**
 * claimLaunchAndFollowRun waits on the any-host queue until some Docker worker is alive (as a
 * claim does), then lasts as long as the run: bounded by its heartbeat, retried without end (a
 * restarted host re-attaches; another host hands the run back to the one that claimed it).
 */
const launchAndFollowProfile: ActivityOptions = {
  scheduleToStartTimeout: '12 minutes',
  startToCloseTimeout: '3650 days',
  heartbeatTimeout: '15 seconds',
  retry: {
    initialInterval: '1 second',
    maximumInterval: '5 seconds',
    nonRetryableErrorTypes: NON_RETRYABLE,
  },
};

/** The container followed to its end here, or what the two-step path must do instead. */
export type Followed = Launched | { followed: true };

/**
 * queued → pulling → running → its container's end in ONE activity on the any-host queue
 * (claimLaunchAndFollowRun): no workflow task between the launch and the end. The execution
 * does not see the launch happen; a control, the timeout or a lost host reads the row when it
 * must act (RunExecution.seeLaunch). When the activity cannot follow the run to its end (an
 * earlier attempt's host claimed it, the launch failed, no host answered), the run goes on as
 * claimAndLaunch's would: launched and followed on its host's own queue, or failed.
 */
export async function launchAndFollow(run: RunExecution): Promise<Followed> {
  run.state = 'queued';
  const claim = run.transitionTo('pulling', 'run.pulling', null);
  const launch = launchTransition(run);
  run.applied('pulling');
  run.launchUnseen = true;
  const anyHost = proxyActivities<HostClaimActivities>({
    ...launchAndFollowProfile,
    taskQueue: run.input.dockerAnyHostQueue,
  });
  const answer: { value?: RunFollowedToEnd; error?: unknown } = {};
  void anyHost.claimLaunchAndFollowRun({ run: run.input, claim, launch }).then(
    (value) => {
      answer.value = value;
      if (value.outcome !== null || value.followFailure !== null) takeEnd(run, value);
    },
    (error: unknown) => {
      answer.error = error;
    },
  );
  const done = () => 'value' in answer || 'error' in answer || run.containerEnded();
  await enforceTimeoutFromHandOff(run, done);
  await condition(done);
  await untilNoPauseOrResumeInFlight(run);
  if (run.containerEnded()) return { followed: true };
  // Launched on its host meanwhile (by this activity's earlier attempt): followed there.
  await run.seeLaunch();
  if (!run.launchUnseen) return { follower: followerOn(run.hostQueue!) };
  run.launchUnseen = false;
  if (answer.value === undefined) return noHostAnswered(run, claim, answer.error);
  const { host, failure } = answer.value;
  const follower = claimedBy(run, host.taskQueue);
  if (failure !== null) {
    return { failed: { reason: launchFailureReason(failure.type), message: failure.message } };
  }
  // An earlier attempt's host claimed the run and has not launched it: it launches it now.
  return launchOnClaimingHost(run, launch, follower);
}

/**
 * The container's end as the activity answers it: its host, its start, and the row's state when
 * no control has read it since the launch (a control that did keeps run.state current).
 */
function takeEnd(run: RunExecution, value: RunFollowedToEnd): void {
  if (run.launchUnseen && value.launchedState !== null) run.state = value.launchedState;
  run.launchUnseen = false;
  run.useHostQueue(value.host.taskQueue);
  if (value.startedAtMs !== null) run.containerStartedMs = value.startedAtMs;
  run.outcome = value.outcome;
  run.followFailure = value.followFailure;
}

/**
 * timeout_seconds counts running time from the container's start, which this execution does not
 * see: its clock starts at the hand-off (never later than the start) and, when it rings, the
 * row says when the container started; what is left is timed as for a seen launch.
 */
async function enforceTimeoutFromHandOff(run: RunExecution, done: () => boolean): Promise<void> {
  const timeoutMs = run.input.timeoutSeconds * 1000;
  await condition(() => done() || !run.launchUnseen, timeoutMs);
  await run.untilLaunchSeen(done);
  if (done() || run.launchUnseen) return;
  await enforceRunTimeout(run, timeoutMs - (Date.now() - run.containerStartedMs), done);
}
