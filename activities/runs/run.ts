import type { DatabasePool } from '../../db/pool';
import { Context, log } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { runWorkflowId, slotFreedSignal } from '../../contracts/runs/run';
import {
  isWithinWorkingHours,
  nextWorkingInstant,
  parseWorkingHours,
} from '../../services/runs/working-hours';
import type { RunsMetering } from '../../services/runs/metering';
import {
  findRunMetering,
  findRunStanding,
  type RunStanding,
  transitionRun,
  tryTakeSlot,
  type RunState,
  waitingHeads,
  type Transition,
  type TransitionOutcome,
} from '../../db/runs/runs';
import { refundLegacyCharge } from '../../db/runs/usage-ledger';

/**
 * The Postgres activities of the run workflow. `transitionRunState` is the ONE way a run's
 * state changes: row and event in one transaction, conditional on the expected from-state,
 * keyed by an event id the workflow made (so a retry is a no-op).
 */
export function createRunActivities(deps: RunEndDeps) {
  return {
    async transitionRunState(t: Transition): Promise<TransitionOutcome> {
      return transitionRun(deps.pool, t);
    },

    /**
     * The slot take of a waiting run (tryTakeSlot), after its working hours: outside them the
     * answer is when they next begin, and no slot is taken (a run that waited past the end of
     * its shift must not start outside it).
     */
    async takeRunSlot(input: {
      trackId: string;
      eventId: string;
      maxConcurrent: number | null;
      anyHostQueue?: string;
      workingHoursTjp?: string | null;
    }): Promise<SlotAnswer> {
      const workingFrom = nextWorkingStart(input.workingHoursTjp ?? null, new Date());
      if (workingFrom !== null) return { outsideWorkingHoursUntil: workingFrom };
      return tryTakeSlot(deps.pool, input);
    },

    /**
     * The end of a run whose container is already removed (the follow activity removed it): the
     * terminal transition, a metered key's refund, the tenant's waiting runs woken. Postgres
     * only, so the workflow runs it as a local activity. Each step is idempotent.
     */
    async recordRunEnd(input: RunEnd): Promise<TransitionOutcome> {
      const outcome = await transitionRun(deps.pool, input.transition);
      await settleRunEnd(deps, input);
      return outcome;
    },

    /**
     * The row's state and exit code: a workflow whose state change found the row elsewhere (an
     * operator reset or replayed it after the row moved on) takes the row's outcome as its own.
     */
    async readRunOutcome(input: {
      trackId: string;
    }): Promise<{ state: RunState; exitCode: number | null } | null> {
      const standing = await findRunStanding(deps.pool, input.trackId);
      return standing && { state: standing.state, exitCode: standing.exitCode };
    },

    /**
     * Where a launch handed to the hosts stands: the row's state, its host and when its
     * container started. A run's workflow reads it when it must act on a container whose launch
     * it has not seen (a control, a timeout or a lost host during claimLaunchAndFollowRun).
     */
    async readRunLaunch(input: { trackId: string }): Promise<RunStanding | null> {
      return findRunStanding(deps.pool, input.trackId);
    },

    /** Metered keys: the run's seconds settled (settleRunSeconds); the name is the histories'. */
    async refundUnusedSeconds(input: { trackId: string; usedSeconds: number }): Promise<void> {
      await settleRunSeconds(deps, input);
    },
  };
}

/**
 * A head signalled this recently (by this worker) is not signalled again: it is on its way to
 * take the slot, and runs that finish meanwhile would otherwise signal the same heads over and
 * over (a storm of signals, each a Temporal write and a workflow task, seen in the bench).
 */
export const WAKE_RESIGNAL_AFTER_MS = 1_000;
const recentlySignalled = new Map<string, number>();

/**
 * After a run gave its slot back: signals the tenant's longest-waiting eligible runs, as many as
 * there are free slots, so they ask for one now. Best effort (a missed signal is covered by the
 * waiting run's fallback poll). Called by finishRun (run-docker.ts) and the reconciler.
 */
export async function wakeWaitingRuns(
  pool: DatabasePool,
  input: { tenantId: string; maxConcurrent: number | null },
): Promise<number> {
  const heads = await waitingHeads(pool, input.tenantId, input.maxConcurrent);
  const now = Date.now();
  for (const [trackId, at] of recentlySignalled)
    if (now - at >= WAKE_RESIGNAL_AFTER_MS) recentlySignalled.delete(trackId);
  const fresh = heads.filter((trackId) => !recentlySignalled.has(trackId));
  for (const trackId of fresh) recentlySignalled.set(trackId, now);
  const client = Context.current().client;
  await Promise.all(
    fresh.map((trackId) =>
      client.workflow
        .getHandle(runWorkflowId(trackId))
        .signal(slotFreedSignal)
        .catch((error: unknown) => {
          // A head that ended meanwhile needs no slot; anything else is worth an operator's look.
          if (error instanceof WorkflowNotFoundError) return;
          log.warn('slot-freed signal not delivered; the run takes the slot on its fallback poll', {
            trackId,
            error: (error as Error).message,
          });
        }),
    ),
  );
  return fresh.length;
}

/** A run's end, as both end paths (recordRunEnd, finishRun in run-docker.ts) take it. */
export interface RunEnd {
  transition: Transition;
  tenantId: string;
  maxConcurrent: number | null;
  refundUsedSeconds: number | null;
}

/**
 * What follows a run's terminal transition: a metered key's seconds settled, then the tenant's
 * waiting runs woken. A failed wake must not fail the end already recorded: the waiting runs
 * still take the slot on their fallback poll (SLOT_POLL_SIGNALLED_MS), so it is logged for
 * operators and the activity succeeds. A settle the quota service did not answer fails the
 * activity, which Temporal retries until it does (the Web UI shows why).
 */
export async function settleRunEnd(deps: RunEndDeps, end: RunEnd): Promise<void> {
  if (end.refundUsedSeconds !== null)
    await settleRunSeconds(deps, {
      trackId: end.transition.trackId,
      usedSeconds: end.refundUsedSeconds,
    });
  try {
    await wakeWaitingRuns(deps.pool, { tenantId: end.tenantId, maxConcurrent: end.maxConcurrent });
  } catch (error) {
    log.warn('waiting runs not woken; they take the slot on their fallback poll', {
      tenantId: end.tenantId,
      error: (error as Error).message,
    });
  }
}

export interface RunEndDeps {
  pool: DatabasePool;
  /** Where metered runs' seconds are kept; null: metering is off. */
  metering: RunsMetering | null;
}

/**
 * A metered run's seconds once it has ended: its reservation in the quota service committed
 * with the seconds it used (rounded up, at most its timeout), the rest released. Keyed by the
 * run, so every end path (the run's own, a retry, the reconciler) charges it once. A run
 * charged before metering moved to the quota service is refunded in runs.usage_ledger.
 */
export async function settleRunSeconds(
  deps: RunEndDeps,
  input: { trackId: string; usedSeconds: number },
): Promise<void> {
  const run = await findRunMetering(deps.pool, input.trackId);
  if (run === null) return;
  const usedSeconds = Math.min(run.timeoutSeconds, Math.max(0, Math.ceil(input.usedSeconds)));
  // A reservation is made for a metered key's run only (services/runs/submit.ts): a run without
  // one, or without a key, was charged, if at all, before metering moved to the quota service.
  if (run.quotaReservationId === null || run.keyId === null)
    return refundLegacyCharge(deps.pool, input.trackId, usedSeconds);
  if (deps.metering === null) {
    log.warn('metering is off: a run reserved in the quota service is not settled', input);
    return;
  }
  const settled = await deps.metering.settle({
    key: { tenantId: run.tenantId, keyId: run.keyId },
    trackId: input.trackId,
    reservationId: run.quotaReservationId,
    usedSeconds,
  });
  if (settled === 'refused')
    log.warn("the run's reservation had expired and its day refused its seconds", input);
}

/** What a waiting run's slot take answers (see tryTakeSlot), or when its working hours begin. */
export type SlotAnswer =
  TransitionOutcome | 'no_slot' | 'no_worker' | { outsideWorkingHoursUntil: string };

/**
 * The next working instant after `now` when `now` is outside the working hours, else null.
 * A definition that no longer parses (it did at submit) or has no working time binds nothing.
 */
function nextWorkingStart(definition: string | null, now: Date): string | null {
  if (definition === null) return null;
  let hours;
  try {
    hours = parseWorkingHours(definition, { stored: true });
  } catch {
    return null;
  }
  if (isWithinWorkingHours(hours, now)) return null;
  return nextWorkingInstant(hours, now)?.toISOString() ?? null;
}

export type RunActivities = ReturnType<typeof createRunActivities>;
