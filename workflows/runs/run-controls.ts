import { ActivityFailure, ApplicationFailure, condition, setHandler } from '@temporalio/workflow';
import {
  CONFLICT_MESSAGES,
  STOP_GRACE_SECONDS,
  WORKFLOW_CANCELLED,
  cancelRunSignal,
  type ControlAction,
  hostLostSignal,
  killUpdate,
  pauseUpdate,
  resumeUpdate,
  runStateQuery,
  slotFreedSignal,
  stopUpdate,
} from '../../contracts/runs/run';
import type { RunExecution } from './run-execution';

/**
 * What a run answers while it lives: its state (a query for operators), the slotFreed signal
 * that wakes it while it waits for a slot, and pause/resume/stop/kill as updates. Each update's
 * validator refuses it in a wrong state (the API answers 409 with the message); its handler marks
 * the run busy before its first await, so of two racing controls only one is accepted.
 */
export function handleQueryAndControls(run: RunExecution): void {
  setHandler(runStateQuery, () => run.state);
  setHandler(slotFreedSignal, () => {
    run.wake.signalled = true;
  });
  setHandler(cancelRunSignal, () => {
    if (run.cancelRequested) return;
    run.cancelRequested = true;
    // Not awaited by the handler, so a run that ends before it launches is not held open.
    void killOnceLaunched(run);
  });
  setHandler(hostLostSignal, (lost) => {
    // Only a followed container's host can be lost: before, no host holds the run; after, the
    // end is already decided.
    const followed = run.state === 'running' || run.state === 'paused' || run.launchUnseen;
    if (followed && !run.containerEnded()) run.hostLost = lost;
  });
  const idle = () => run.busy === null;
  setHandler(pauseUpdate, () => pauseOrResume(run, 'pause'), {
    validator: () => refuseUnless(idle() && run.mayAccept('pause'), CONFLICT_MESSAGES.pause),
  });
  setHandler(resumeUpdate, () => pauseOrResume(run, 'resume'), {
    validator: () => refuseUnless(idle() && run.mayAccept('resume'), CONFLICT_MESSAGES.resume),
  });
  setHandler(stopUpdate, () => stop(run), {
    validator: () => refuseUnless(idle() && run.mayAccept('stop'), CONFLICT_MESSAGES.stop),
  });
  setHandler(killUpdate, () => kill(run), {
    // A kill may overtake a stop that is still in its grace period.
    validator: () =>
      refuseUnless(
        (idle() || run.busy === 'stop') && run.mayAccept('kill'),
        CONFLICT_MESSAGES.kill,
      ),
  });
}

/**
 * A control taken while the launch was unseen (the validator could not tell) is decided once
 * the row is read: refused as its validator would have refused it, the run left as it was.
 */
async function decideOnceSeen(
  run: RunExecution,
  action: ControlAction,
  busyBefore: RunExecution['busy'],
): Promise<void> {
  if (!run.launchUnseen) return;
  await run.seeLaunch();
  if (run.accepts(action)) return;
  run.busy = busyBefore;
  throw ApplicationFailure.nonRetryable(CONFLICT_MESSAGES[action], 'Conflict');
}

/** Freezes or thaws the container, then records paused or running. */
async function pauseOrResume(run: RunExecution, action: 'pause' | 'resume'): Promise<void> {
  run.busy = action;
  const { trackId } = run.input;
  try {
    await decideOnceSeen(run, action, null);
    if (action === 'pause') {
      await run.docker!.pauseRunContainer({ trackId });
      await run.move('paused', 'run.paused', null);
    } else {
      await run.docker!.unpauseRunContainer({ trackId });
      await run.move('running', 'run.resumed', null);
    }
  } catch (error) {
    throw refusal(error, CONFLICT_MESSAGES[action]);
  } finally {
    run.busy = null;
  }
}

/** Records the stop, then SIGTERM and SIGKILL after the grace; the run ends exited/stopped. */
async function stop(run: RunExecution): Promise<void> {
  run.busy = 'stop';
  await decideOnceSeen(run, 'stop', null);
  run.final = { state: 'exited', reason: 'stopped' };
  const payload = { grace_seconds: STOP_GRACE_SECONDS };
  await run.move(run.state, 'run.stopping', 'stop_requested', {}, payload);
  await run.docker!.stopRunContainer({
    trackId: run.input.trackId,
    graceSeconds: STOP_GRACE_SECONDS,
  });
}

async function kill(run: RunExecution, reason = 'killed'): Promise<void> {
  const busyBefore = run.busy;
  run.busy = 'kill';
  await decideOnceSeen(run, 'kill', busyBefore);
  run.final = { state: 'killed', reason };
  await run.docker!.killRunContainer({ trackId: run.input.trackId });
}

/**
 * A cancelled run (its DAG was cancelled) is killed as soon as a kill is accepted: at once when
 * it runs or is paused, after its launch when it is launching, after a pause or resume in
 * flight. One that is still waiting ends at its wait (waitForStartAndSlot), never launched.
 */
async function killOnceLaunched(run: RunExecution): Promise<void> {
  // A launch handed to the hosts is read until its container runs (or it ends meanwhile).
  await run.untilLaunchSeen(() => run.containerEnded());
  const killable = () => (run.busy === null || run.busy === 'stop') && run.accepts('kill');
  await condition(() => run.containerEnded() || (run.docker !== null && killable()));
  if (run.containerEnded() || run.final?.state === 'killed') return;
  await kill(run, WORKFLOW_CANCELLED).catch(() => undefined);
}

function refuseUnless(ok: boolean, message: string): void {
  if (!ok) throw new Error(message);
}

/** A control whose Docker call found the container no longer running is a 409, not a 500. */
function refusal(error: unknown, message: string): Error {
  if (!(error instanceof ActivityFailure)) return error as Error;
  const notRunning = error.cause instanceof ApplicationFailure && error.cause.type === 'NotRunning';
  return ApplicationFailure.nonRetryable(notRunning ? message : 'control_failed', 'Conflict');
}
