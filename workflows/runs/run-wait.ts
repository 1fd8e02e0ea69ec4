import { condition, continueAsNew, workflowInfo } from '@temporalio/workflow';
import { WORKFLOW_CANCELLED, type RunWorkflowInput } from '../../contracts/runs/run';
import type { RunEnded, RunExecution, TerminalChange } from './run-execution';

/**
 * A waiting run relies on the slotFreed signal (sent when a run of its tenant gives a slot back)
 * and polls only this often: a poll is a timer, a workflow task and a local activity.
 */
export const SLOT_POLL_SIGNALLED_MS = 30_000;
/** With no Docker host alive no run gives a slot back to signal this one: it polls this often. */
export const SLOT_POLL_FALLBACK_MS = 5_000;
/** Past this many history events a waiting run continues as new (its wait can be long). */
export const WAITING_HISTORY_EVENTS_MAX = 5_000;

/** How a run's wait ended: it holds a slot, it ran out of time, or its row moved on without it. */
export type Waited = 'queued' | 'expired' | 'queue_timeout' | 'gone' | 'cancelled';

/**
 * Waits for eligible_start, then asks for a slot (takeRunSlot: the slot and `queued` in one
 * transaction) until one is free: again whenever a run of the tenant gives a slot back, else at
 * its poll. Ends with `expired` once expires_at passes, `queue_timeout` once max_queue_seconds
 * past eligible_start pass, whichever comes first; with `gone` when the row is past `scheduled`
 * without this execution (an operator reset it).
 */
export async function waitForStartAndSlot(run: RunExecution): Promise<Waited> {
  const { input } = run;
  const eligibleMs = Date.parse(input.eligibleStart);
  const expiresMs = input.expiresAt === null ? Infinity : Date.parse(input.expiresAt);
  const queueDeadlineMs = eligibleMs + input.maxQueueSeconds * 1000;
  const untilDeadlines = (ms: number) =>
    Math.max(1, Math.min(ms, expiresMs - Date.now(), queueDeadlineMs - Date.now()));
  // A timer either way: sleeping until the cancelRun signal or the time is replay-compatible
  // with the plain sleep of runs recorded before it.
  const sleepUnlessCancelled = (ms: number) => condition(() => run.cancelRequested, ms);
  for (;;) {
    if (run.cancelRequested) return 'cancelled';
    const now = Date.now();
    if (now >= expiresMs) return 'expired';
    if (now >= queueDeadlineMs) return 'queue_timeout';
    if (now < eligibleMs) {
      await sleepUnlessCancelled(Math.min(eligibleMs, expiresMs) - now);
      continue;
    }
    run.wake.signalled = false;
    const taken = await run.db.takeRunSlot({
      trackId: input.trackId,
      eventId: run.nextEventId(),
      maxConcurrent: input.tierConcurrentRuns,
      anyHostQueue: input.dockerAnyHostQueue,
      workingHoursTjp: input.workingHoursTjp ?? null,
    });
    if (taken === 'applied' || taken === 'already_applied') return 'queued';
    if (taken === 'conflict') return 'gone';
    if (typeof taken === 'object') {
      // Outside the working hours the run was accepted under: it sleeps until they begin.
      await sleepUnlessCancelled(
        untilDeadlines(Date.parse(taken.outsideWorkingHoursUntil) - Date.now()),
      );
      continue;
    }
    if (workflowInfo().historyLength > WAITING_HISTORY_EVENTS_MAX)
      await continueAsNew<(input: RunWorkflowInput) => Promise<RunEnded>>(input);
    const pollMs = taken === 'no_worker' ? SLOT_POLL_FALLBACK_MS : SLOT_POLL_SIGNALLED_MS;
    await condition(() => run.wake.signalled || run.cancelRequested, untilDeadlines(pollMs));
  }
}

/**
 * A run whose wait ran out (`expired`, `queue_timeout`) ends failed, before any slot or host; so
 * does a `gone` one in an execution recorded before run-follows-row (see run.ts). A cancelled
 * one (its DAG was cancelled) ends killed, never launched.
 */
export async function failBeforeStart(run: RunExecution, reason: Waited): Promise<TerminalChange> {
  const cancelled = reason === 'cancelled';
  const to = cancelled ? 'killed' : 'failed';
  const recorded = await run.move(to, `run.${to}`, cancelled ? WORKFLOW_CANCELLED : reason, {
    finished_at: 'now',
  });
  await run.refund(0);
  return { recorded, own: { state: to, exitCode: null } };
}
