import { HOST_LOST, type HostLost, type TransitionFields } from '../../contracts/runs/run';
import type { FinalState, RunExecution, TerminalChange } from './run-execution';

/**
 * The followed container's end becomes the run's: exited (0, or stopped), failed (nonzero exit,
 * or the container or its host lost), timeout or killed, with its exit code, log files and sizes.
 * One activity records it, gives the slot back (waking the tenant's waiting runs), refunds a
 * metered key's unused seconds and removes the container if the follow activity has not; a lost
 * host's container is left to that host (its worker removes it if it comes back).
 */
export async function settle(run: RunExecution): Promise<TerminalChange> {
  if (run.hostLost !== null) {
    // Its container's start, from the row, when the launch was never seen here.
    if (run.launchUnseen) await run.seeLaunch();
    return settleHostLost(run, run.hostLost);
  }
  const result = run.outcome;
  const settled: { state: FinalState; reason: string } =
    run.final ??
    (result === null
      ? { state: 'failed', reason: 'container_lost' }
      : result.exitCode === 0
        ? { state: 'exited', reason: 'completed' }
        : { state: 'failed', reason: 'nonzero_exit' });
  const fields: TransitionFields = {
    finished_at: 'now',
    exit_code: result?.exitCode ?? null,
    ...(result
      ? {
          stdout_file: result.stdoutFile,
          stderr_file: result.stderrFile,
          stdout_bytes: String(result.stdoutBytes),
          stderr_bytes: String(result.stderrBytes),
          result_summary: result.resultSummary,
        }
      : {}),
  };
  const payload = run.followFailure === null ? {} : { error: run.followFailure };
  const t = run.transitionTo(
    settled.state,
    `run.${settled.state}`,
    settled.reason,
    fields,
    payload,
  );
  const usedSeconds = (Date.now() - run.containerStartedMs) / 1000;
  const recorded = await run.finish(t, usedSeconds, result?.removed === true);
  return { recorded, own: { state: settled.state, exitCode: result?.exitCode ?? null } };
}

/** Recorded without the host: the seconds up to the host's last sign of life are charged. */
async function settleHostLost(run: RunExecution, lost: HostLost): Promise<TerminalChange> {
  const t = run.transitionTo(
    'failed',
    'run.failed',
    HOST_LOST,
    { finished_at: 'now' },
    {
      worker_id: lost.workerId,
      silent_seconds: lost.silentSeconds,
    },
  );
  const usedSeconds = Math.max(
    0,
    (Date.now() - run.containerStartedMs) / 1000 - lost.silentSeconds,
  );
  const recorded = await run.finish(t, usedSeconds, true);
  return { recorded, own: { state: 'failed', exitCode: null } };
}
