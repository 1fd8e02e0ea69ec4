import { condition } from '@temporalio/workflow';
import { failureMessage, type RunDockerProxy, type RunExecution } from './run-execution';

/**
 * running ⇄ paused until the container ends: the follow activity (on the run's host) reads its
 * logs and stats and, once it has exited, removes it and answers its outcome. Meanwhile the
 * controls (run-controls.ts) pause, resume, stop or kill it, and timeout_seconds of running time
 * kills it. Returns once the container has ended and no pause or resume is in flight.
 */
export async function followContainer(run: RunExecution, follower: RunDockerProxy): Promise<void> {
  const { trackId, tenantId, memoryLimitMb, timeoutSeconds } = run.input;
  run.containerStartedMs = Date.now();
  void follower.followRunContainer({ trackId, tenantId, memoryLimitMb, removeOnExit: true }).then(
    (outcome) => {
      run.outcome = outcome;
    },
    (error: unknown) => {
      run.followFailure = failureMessage(error);
    },
  );
  await enforceRunTimeout(run, timeoutSeconds * 1000, () => run.containerEnded());
  await condition(() => run.containerEnded());
  await untilNoPauseOrResumeInFlight(run);
}

/** A pause or resume in flight on a lost host never answers. */
export async function untilNoPauseOrResumeInFlight(run: RunExecution): Promise<void> {
  await condition(() => (run.busy !== 'pause' && run.busy !== 'resume') || run.hostLost !== null);
}

/** The run's timeout over its running time left, killing the container when it is spent. */
export async function enforceRunTimeout(
  run: RunExecution,
  remainingMs: number,
  ended: () => boolean,
): Promise<void> {
  await enforceTimeout(remainingMs, {
    ended,
    running: () => run.state === 'running' && run.busy === null,
    onTimeout: async () => {
      run.busy = 'timeout';
      run.final = { state: 'timeout', reason: 'timeout' };
      await run.docker!.killRunContainer({ trackId: run.input.trackId });
    },
  });
}

/**
 * timeout_seconds counts time spent running: paused time is not counted (the process is
 * frozen), and neither is a pause/resume in flight.
 */
async function enforceTimeout(
  timeoutMs: number,
  run: { ended: () => boolean; running: () => boolean; onTimeout: () => Promise<void> },
): Promise<void> {
  let remainingMs = timeoutMs;
  while (!run.ended()) {
    if (!run.running()) {
      await condition(() => run.ended() || run.running());
      continue;
    }
    const since = Date.now();
    const changed = await condition(() => run.ended() || !run.running(), Math.max(1, remainingMs));
    remainingMs -= Date.now() - since;
    if (!changed) {
      await run.onTimeout();
      return;
    }
  }
}
