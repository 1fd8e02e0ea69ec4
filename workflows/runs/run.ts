import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { ClaimedLaunch, HostClaimActivities } from '../../activities/runs/host';
import type { RunActivities } from '../../activities/runs/run';
import type {
  ContainerOutcome,
  LaunchedContainer,
  RunDockerActivities,
} from '../../activities/runs/run-docker';
import {
  claimHostProfile,
  dockerCallProfile,
  localPostgresProfile,
  postgresProfile,
} from '../platform/activity-profiles';
import { RUN_STATE } from '../platform/search-attributes';
import {
  CONFLICT_MESSAGES,
  CONTROL_FROM_STATES,
  STOP_GRACE_SECONDS,
  killUpdate,
  pauseUpdate,
  resumeUpdate,
  runStateQuery,
  slotFreedSignal,
  stopUpdate,
  type ControlAction,
  type RunState,
  type RunWorkflowInput,
  type Transition,
  type TransitionFields,
  type TransitionOutcome,
  isTerminal,
} from './definitions';
import { nextWorkflowUlid } from './ids';

export { runWorkflowId } from './definitions';
export type { RunWorkflowInput };

/** The spec's scheduler tick: a waiting run asks for a slot this often. */
export const DISPATCH_TICK_MS = 1_000;
/** With the slotFreed signal, a waiting run polls only this often (in case a signal is missed). */
export const SLOT_POLL_FALLBACK_MS = 5_000;
/** patched() ids of the signal-driven dispatch (histories recorded before it replay unchanged). */
const SLOT_SIGNAL_PATCH = 'slot-freed-signal';
/**
 * patched() id of the run in five activities instead of ten: the claim records `pulling`,
 * one host activity pulls, starts and records `running`, one host activity records the end,
 * removes the container, wakes waiting runs and refunds. Each Temporal round trip is a
 * persistence write and two task dispatches, which bound completed runs per second.
 */
const MERGED_ACTIVITIES_PATCH = 'run-activities-merged';
/**
 * With MERGED_ACTIVITIES_PATCH, a waiting run relies on the slotFreed signal and polls only
 * this often: a poll is a timer, two workflow tasks and an activity, and a tenant with a
 * long queue paid that for every waiting run every 5 s (it was most of Temporal's work).
 */
export const SLOT_POLL_SIGNALLED_MS = 30_000;
/**
 * patched() id of the run in two activity tasks (issue 3, completed runs per second): the slot
 * take, every Postgres-only state change and the end's record are local activities (run in the
 * workflow task, no task dispatch, one marker event); the claim and the launch are one activity
 * on the any-host queue; the follow activity removes the container once it has exited; the
 * transient states queued and pulling are no longer upserted as RunState (they last a moment;
 * running, paused and the terminal state still are). 43 history events and 6 workflow tasks
 * per trivial run become 24 and 3.
 */
const FAST_PATH_PATCH = 'run-fast-path';
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
 * patched() id: the run's row is the truth. A state change that finds the row moved on without
 * this execution (an operator reset or replayed it after the run went further, or ended) makes
 * the execution follow the row: an ended run ends with the row's outcome, an active one is
 * claimed and launched again, which finds its host and container instead of making new ones.
 */
const ADOPT_ROW_PATCH = 'run-follows-row';
/** Past this many history events a waiting run continues as new (its wait can be long). */
export const WAITING_HISTORY_EVENTS_MAX = 5_000;

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

type RunDockerProxy = ReturnType<typeof proxyActivities<RunDockerActivities>>;
type FinalState = Extract<RunState, 'exited' | 'failed' | 'timeout' | 'killed'>;
/** What a run's workflow returns: the run's terminal state and its container's exit code. */
interface RunEnded {
  state: FinalState;
  exitCode: number | null;
}

/**
 * One container run, from submit to a terminal state: waits for its start (and a slot),
 * claims a Docker host, pulls, starts, follows the container, and takes pause/resume/stop/kill
 * as updates. Every state change goes through transitionRunState (row + event, one transaction).
 *
 * Concurrency: a run holds a slot from `queued` (taken at dispatch) until it is terminal.
 * A run deferred with scheduled_start does NOT hold a slot while it waits: the spec's table
 * (enforced at dispatch; counts pulling, running, paused) wins over its guidance, so deferred
 * runs never block runs that are due now.
 */
export async function runWorkflow(input: RunWorkflowInput): Promise<RunEnded> {
  const fast = patched(FAST_PATH_PATCH);
  const db = fast
    ? proxyLocalActivities<RunActivities>(localPostgresProfile)
    : proxyActivities<RunActivities>(postgresProfile);
  let state: RunState = 'scheduled';
  /** The control being carried out; a second one is refused until it is done. */
  let busy: 'pause' | 'resume' | 'stop' | 'kill' | 'timeout' | null = null;
  let final: { state: FinalState; reason: string } | null = null;
  let outcome: ContainerOutcome | null = null;
  let followFailure: string | null = null;
  let docker: RunDockerProxy | null = null;
  let startedMs = 0;

  /** Event ids of this run's state changes, rising in the order they are made. */
  let lastEventId: string | null = null;
  const eventId = () => (lastEventId = nextWorkflowUlid(lastEventId));
  const move = async (
    to: RunState,
    eventType: string,
    reason: string | null,
    fields: TransitionFields = {},
    payload = {},
  ): Promise<TransitionOutcome> => {
    const from = state;
    const recorded = await db.transitionRunState({
      trackId: input.trackId,
      eventId: eventId(),
      from,
      to,
      eventType,
      reason,
      payload,
      fields,
    });
    state = to;
    if (to !== from) upsertSearchAttributes([{ key: RUN_STATE, value: to }]);
    return recorded;
  };
  /** A state change for an activity that records it itself (the merged activities). */
  const transitionTo = (
    to: RunState,
    eventType: string,
    reason: string | null,
    fields: TransitionFields = {},
    payload = {},
  ): Transition => ({
    trackId: input.trackId,
    eventId: eventId(),
    from: state,
    to,
    eventType,
    reason,
    payload,
    fields,
  });
  /** What move() does after its activity, once such an activity has recorded `to`. */
  const applied = (to: RunState) => {
    const from = state;
    state = to;
    if (to !== from) upsertSearchAttributes([{ key: RUN_STATE, value: to }]);
  };
  /** The terminal change, container removal, slot hand-back and refund: one host activity. */
  const finish = async (t: Transition, usedSeconds: number): Promise<TransitionOutcome> => {
    const recorded = await docker!.finishRun({
      transition: t,
      tenantId: input.tenantId,
      maxConcurrent: input.tierConcurrentRuns,
      refundUsedSeconds: input.metered ? usedSeconds : null,
    });
    applied(t.to);
    return recorded;
  };
  /** The row's end, when the row has ended (ADOPT_ROW_PATCH); its search attribute follows. */
  const rowEnd = async (): Promise<RunEnded | null> => {
    const row = await db.readRunOutcome({ trackId: input.trackId });
    if (row === null || !isTerminal(row.state)) return null;
    applied(row.state);
    return { state: row.state as FinalState, exitCode: row.exitCode };
  };
  /** How the execution ends after its terminal change: its own end, or the row's (ADOPT_ROW_PATCH). */
  const endAfter = async (recorded: TransitionOutcome, own: RunEnded): Promise<RunEnded> =>
    recorded === 'conflict' && patched(ADOPT_ROW_PATCH) ? ((await rowEnd()) ?? own) : own;

  setHandler(runStateQuery, () => state);
  const wake = { signalled: false };
  setHandler(slotFreedSignal, () => {
    wake.signalled = true;
  });
  const giveSlotBack = async () => {
    if (patched(SLOT_SIGNAL_PATCH)) {
      await db.wakeWaitingRuns({
        tenantId: input.tenantId,
        maxConcurrent: input.tierConcurrentRuns,
      });
    }
  };
  /** Whether a control is accepted now, `busy` aside: its from-state, and a container not ended. */
  const accepts = (action: ControlAction) =>
    CONTROL_FROM_STATES[action].includes(state) && outcome === null && followFailure === null;
  setHandler(
    pauseUpdate,
    async () => {
      busy = 'pause';
      try {
        await docker!.pauseRunContainer({ trackId: input.trackId });
        await move('paused', 'run.paused', null);
      } catch (error) {
        throw refusal(error, 'not_running');
      } finally {
        busy = null;
      }
    },
    {
      validator: () => refuseUnless(busy === null && accepts('pause'), CONFLICT_MESSAGES.pause),
    },
  );
  setHandler(
    resumeUpdate,
    async () => {
      busy = 'resume';
      try {
        await docker!.unpauseRunContainer({ trackId: input.trackId });
        await move('running', 'run.resumed', null);
      } catch (error) {
        throw refusal(error, 'not_paused');
      } finally {
        busy = null;
      }
    },
    {
      validator: () => refuseUnless(busy === null && accepts('resume'), CONFLICT_MESSAGES.resume),
    },
  );
  setHandler(
    stopUpdate,
    async () => {
      busy = 'stop';
      final = { state: 'exited', reason: 'stopped' };
      await move(
        state,
        'run.stopping',
        'stop_requested',
        {},
        { grace_seconds: STOP_GRACE_SECONDS },
      );
      await docker!.stopRunContainer({ trackId: input.trackId, graceSeconds: STOP_GRACE_SECONDS });
    },
    { validator: () => refuseUnless(busy === null && accepts('stop'), CONFLICT_MESSAGES.stop) },
  );
  setHandler(
    killUpdate,
    async () => {
      busy = 'kill';
      final = { state: 'killed', reason: 'killed' };
      await docker!.killRunContainer({ trackId: input.trackId });
    },
    // A kill may overtake a stop that is still in its grace period.
    {
      validator: () =>
        refuseUnless((busy === null || busy === 'stop') && accepts('kill'), CONFLICT_MESSAGES.kill),
    },
  );

  /**
   * FAST_PATH_PATCH: claim and launch in one any-host activity. Answers the container, or why
   * the launch failed; either way the host's Docker queue that owns the run from now on.
   */
  const claimAndLaunch = async (): Promise<
    (LaunchedContainer | { failed: { reason: string; message: string } }) & {
      docker: RunDockerProxy;
      follower: RunDockerProxy;
    }
  > => {
    const claim = transitionTo('pulling', 'run.pulling', null);
    const launch = { ...transitionTo('running', 'run.running', null), from: 'pulling' as const };
    const { claimAndLaunchRun, claimDockerHostForRun } = proxyActivities<HostClaimActivities>({
      ...claimAndLaunchProfile,
      taskQueue: input.dockerAnyHostQueue,
    });
    const onHost = (taskQueue: string) => ({
      docker: proxyActivities<RunDockerActivities>({ ...dockerCallProfile, taskQueue }),
      follower: proxyActivities<RunDockerActivities>({ ...followProfile, taskQueue }),
    });
    let launched: ClaimedLaunch;
    try {
      launched = await claimAndLaunchRun({ run: input, claim, launch });
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      // No host answered: the host that claimed the run (or claims it now) cleans up.
      const host = await claimDockerHostForRun({ transition: claim });
      state = 'pulling';
      return {
        failed: { reason: 'start_failed', message: failureMessage(error) },
        ...onHost(host.taskQueue),
      };
    }
    state = 'pulling';
    const proxies = onHost(launched.host.taskQueue);
    if (launched.failure)
      return {
        failed: { reason: launchFailureReason(launched.failure.type), ...launched.failure },
        ...proxies,
      };
    if (launched.containerId !== null)
      return { containerId: launched.containerId, state: launched.state, ...proxies };
    // An earlier attempt's host claimed the run: the launch happens on that host's queue.
    try {
      const container = await proxies.docker.launchRunContainer({
        run: input,
        transition: launch,
      });
      return { ...container, ...proxies };
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      const type = error.cause instanceof ApplicationFailure ? error.cause.type : null;
      return {
        failed: { reason: launchFailureReason(type), message: failureMessage(error) },
        ...proxies,
      };
    }
  };

  const waited = await waitForSlot(input, db, wake, fast, eventId);
  if (waited === 'gone' && patched(ADOPT_ROW_PATCH)) {
    // Past scheduled without this execution: ended, it ends so; active, it is claimed again.
    const ended = await rowEnd();
    if (ended) return ended;
  } else if (waited !== 'queued') {
    const recorded = await move('failed', 'run.failed', waited, { finished_at: 'now' });
    await refund(input, db, 0);
    return endAfter(recorded, { state: 'failed', exitCode: null });
  }
  state = 'queued';
  if (!fast) upsertSearchAttributes([{ key: RUN_STATE, value: 'queued' }]);
  const merged = fast || patched(MERGED_ACTIVITIES_PATCH);
  const { claimDockerHost, claimDockerHostForRun } = proxyActivities<HostClaimActivities>({
    ...claimHostProfile,
    taskQueue: input.dockerAnyHostQueue,
  });
  let follower: ReturnType<typeof proxyActivities<RunDockerActivities>>;
  let containerId: string;
  if (fast) {
    const launch = await claimAndLaunch();
    docker = launch.docker;
    follower = launch.follower;
    if ('failed' in launch) {
      const recorded = await finish(
        transitionTo(
          'failed',
          'run.failed',
          launch.failed.reason,
          { finished_at: 'now' },
          {
            error: launch.failed.message,
          },
        ),
        0,
      );
      return endAfter(recorded, { state: 'failed', exitCode: null });
    }
    containerId = launch.containerId;
    applied(launch.state ?? 'running');
  } else {
    const host = merged
      ? await claimDockerHostForRun({ transition: transitionTo('pulling', 'run.pulling', null) })
      : await claimDockerHost();
    if (merged) applied('pulling');
    else await move('pulling', 'run.pulling', null, { worker_id: host.workerId });
    docker = proxyActivities<RunDockerActivities>({
      ...dockerCallProfile,
      taskQueue: host.taskQueue,
    });
    follower = proxyActivities<RunDockerActivities>({
      ...followProfile,
      taskQueue: host.taskQueue,
    });

    try {
      if (merged) {
        containerId = (
          await docker.launchRunContainer({
            run: input,
            transition: transitionTo('running', 'run.running', null),
          })
        ).containerId;
      } else {
        await docker.pullRunImage({ image: input.image });
        containerId = (await docker.startRunContainer(input)).containerId;
      }
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      const type = error.cause instanceof ApplicationFailure ? error.cause.type : null;
      const reason = type === 'ImageNotFound' ? 'image_pull_failed' : 'start_failed';
      if (merged) {
        await finish(
          transitionTo(
            'failed',
            'run.failed',
            reason,
            { finished_at: 'now' },
            {
              error: failureMessage(error),
            },
          ),
          0,
        );
        return { state: 'failed', exitCode: null };
      }
      await move(
        'failed',
        'run.failed',
        reason,
        { finished_at: 'now' },
        { error: failureMessage(error) },
      );
      await docker.removeRunContainer({ trackId: input.trackId });
      await giveSlotBack();
      await refund(input, db, 0);
      return { state: 'failed', exitCode: null };
    }
    if (merged) applied('running');
    else
      await move('running', 'run.running', null, { container_id: containerId, started_at: 'now' });
  }
  startedMs = Date.now();

  void follower
    .followRunContainer({
      trackId: input.trackId,
      tenantId: input.tenantId,
      memoryLimitMb: input.memoryLimitMb,
      ...(fast ? { removeOnExit: true } : {}),
    })
    .then(
      (result) => {
        outcome = result;
      },
      (error: unknown) => {
        followFailure = failureMessage(error);
      },
    );
  await enforceTimeout(input.timeoutSeconds * 1000, {
    ended: () => outcome !== null || followFailure !== null,
    running: () => state === 'running' && busy === null,
    onTimeout: async () => {
      busy = 'timeout';
      final = { state: 'timeout', reason: 'timeout' };
      await docker.killRunContainer({ trackId: input.trackId });
    },
  });
  await condition(() => outcome !== null || followFailure !== null);
  await condition(() => busy !== 'pause' && busy !== 'resume');

  const result = outcome as ContainerOutcome | null;
  const settled: { state: FinalState; reason: string } =
    final ??
    (result === null
      ? { state: 'failed', reason: 'container_lost' }
      : result.exitCode === 0
        ? { state: 'exited', reason: 'completed' }
        : { state: 'failed', reason: 'nonzero_exit' });
  const terminalFields: TransitionFields = {
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
  const terminalPayload = followFailure === null ? {} : { error: followFailure };
  let recorded: TransitionOutcome;
  if (fast && result?.removed) {
    // The follow activity removed the container: the end is Postgres only, a local activity.
    const t = transitionTo(
      settled.state,
      `run.${settled.state}`,
      settled.reason,
      terminalFields,
      terminalPayload,
    );
    recorded = await db.recordRunEnd({
      transition: t,
      tenantId: input.tenantId,
      maxConcurrent: input.tierConcurrentRuns,
      refundUsedSeconds: input.metered ? (Date.now() - startedMs) / 1000 : null,
    });
    applied(t.to);
  } else if (merged) {
    recorded = await finish(
      transitionTo(
        settled.state,
        `run.${settled.state}`,
        settled.reason,
        terminalFields,
        terminalPayload,
      ),
      (Date.now() - startedMs) / 1000,
    );
  } else {
    recorded = await move(
      settled.state,
      `run.${settled.state}`,
      settled.reason,
      terminalFields,
      terminalPayload,
    );
    await docker.removeRunContainer({ trackId: input.trackId });
    await giveSlotBack();
    await refund(input, db, (Date.now() - startedMs) / 1000);
  }
  const ended = await endAfter(recorded, {
    state: settled.state,
    exitCode: result?.exitCode ?? null,
  });
  await condition(allHandlersFinished);
  return ended;
}

/**
 * Waits for eligible_start, then asks for a slot until one is free: again whenever a run of
 * the tenant gives a slot back (slotFreed signal), else every SLOT_POLL_FALLBACK_MS. Ends with
 * `expired` once expires_at passes, `queue_timeout` once max_queue_seconds past
 * eligible_start pass, whichever comes first.
 */
async function waitForSlot(
  input: RunWorkflowInput,
  db: RunActivities,
  wake: { signalled: boolean },
  fast: boolean,
  eventId: () => string,
): Promise<'queued' | 'expired' | 'queue_timeout' | 'gone'> {
  const eligibleMs = Date.parse(input.eligibleStart);
  const expiresMs = input.expiresAt === null ? Infinity : Date.parse(input.expiresAt);
  const queueDeadlineMs = eligibleMs + input.maxQueueSeconds * 1000;
  for (;;) {
    const now = Date.now();
    if (now >= expiresMs) return 'expired';
    if (now >= queueDeadlineMs) return 'queue_timeout';
    if (now < eligibleMs) {
      await sleep(Math.min(eligibleMs, expiresMs) - now);
      continue;
    }
    wake.signalled = false;
    const taken = await db.takeRunSlot({
      trackId: input.trackId,
      eventId: eventId(),
      maxConcurrent: input.tierConcurrentRuns,
      anyHostQueue: input.dockerAnyHostQueue,
      workingHoursTjp: input.workingHoursTjp ?? null,
    });
    if (taken === 'applied' || taken === 'already_applied') return 'queued';
    if (taken === 'conflict') return 'gone';
    // Answers only runs submitted with working hours give (their input has them): no old
    // history reaches this branch, so it needs no patch.
    if (typeof taken === 'object') {
      const untilMs = Date.parse(taken.outsideWorkingHoursUntil);
      await sleep(Math.max(1, Math.min(untilMs, expiresMs, queueDeadlineMs) - Date.now()));
      continue;
    }
    if (workflowInfo().historyLength > WAITING_HISTORY_EVENTS_MAX)
      await continueAsNew<typeof runWorkflow>(input);
    const signalDriven = fast || patched(SLOT_SIGNAL_PATCH);
    // With no Docker host alive no run gives a slot back to signal this one: it polls until one is.
    const pollMs = !signalDriven
      ? DISPATCH_TICK_MS
      : taken !== 'no_worker' && (fast || patched(MERGED_ACTIVITIES_PATCH))
        ? SLOT_POLL_SIGNALLED_MS
        : SLOT_POLL_FALLBACK_MS;
    const waitMs = Math.max(
      1,
      Math.min(pollMs, expiresMs - Date.now(), queueDeadlineMs - Date.now()),
    );
    if (signalDriven) await condition(() => wake.signalled, waitMs);
    else await sleep(waitMs);
  }
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

async function refund(
  input: RunWorkflowInput,
  db: RunActivities,
  usedSeconds: number,
): Promise<void> {
  if (input.metered) await db.refundUnusedSeconds({ trackId: input.trackId, usedSeconds });
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

function launchFailureReason(type: string | null | undefined): string {
  return type === 'ImageNotFound' ? 'image_pull_failed' : 'start_failed';
}

function failureMessage(error: unknown): string {
  if (error instanceof ActivityFailure && error.cause instanceof Error) return error.cause.message;
  return error instanceof Error ? error.message : String(error);
}
