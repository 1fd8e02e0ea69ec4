/**
 * The run workflow: one container run, from submit to a terminal state.
 *
 * WHICH SHAPE A NEW RUN TAKES: one, the new branch of every patch below. It waits for
 * eligible_start and a slot (takeRunSlot, a local activity; woken by the slotFreed signal, else a
 * poll every 30 s, 5 s while no Docker host is alive); one activity on the any-host queue claims a
 * host and launches the container; one activity on that host follows it and removes it once it
 * has exited; a local activity records the end (the host's finishRun when the container is still
 * there). Every Postgres step is a local activity; RunState is upserted for running, paused and
 * the terminal state. A trivial run: 25 history events, 3 workflow tasks, 2 activity tasks, 2
 * local activities. A state change that finds the row moved on without this execution (an
 * operator reset it) makes it follow the row (run-follows-row).
 *
 * PATCHES, by the steps of Temporal's patching sample (1 the old code alone, 2 patched() beside
 * it, 3 deprecatePatch() with the new branch alone, 4 the call removed):
 * - run-fast-path: step 3, deprecatePatch. Next (remove the call) once no open execution carries
 *   its patched() marker, i.e. every runWorkflow started before this code was deployed has closed:
 *   `temporal workflow list --query "WorkflowType='runWorkflow' AND ExecutionStatus='Running' AND
 *   StartTime < '<deployed at>'"` answers nothing, in every namespace that runs it (a deprecated
 *   marker is skipped on replay; a patched() one without its call is a nondeterminism error).
 * - run-activities-merged, slot-freed-signal: step 4, removed. Their patched() calls lived inside
 *   run-fast-path's old branch (`fast || patched(...)`): new runs never recorded them, and every
 *   execution that did took run-fast-path's old branch, which is gone with it.
 * - run-follows-row: step 2, patched() (landed 2026-11-24, 2b12c02). Next (deprecatePatch) once no
 *   open execution started before it landed (the same list with that StartTime); an execution
 *   that takes its old branch ends in that workflow task, so none is open mid-branch.
 * Checked on 2026-11-24 before retiring: `temporal workflow list --query
 * "ExecutionStatus='Running'"` in `default`: none; the same in platform-test with
 * `AND WorkflowType='runWorkflow'`: 326, none of which had run a workflow task (no marker, no
 * shape yet); no open runWorkflow with `TemporalChangeVersion` run-fast-path,
 * run-activities-merged or slot-freed-signal in either namespace.
 *
 * RECORDED HISTORIES THAT PROVE EACH LIVE SHAPE (test/histories/runs/; the replay project replays
 * them and checks each one's markers, test/replay/histories.test.ts):
 * - new runs (run-fast-path deprecated): run-{exited,paused-resumed,timed-out,killed,
 *   waited-for-slot}.deprecated.json; reset, following the row (+ run-follows-row): run-reset-
 *   {FirstWorkflowTask-exited,FirstWorkflowTask-failed,LastWorkflowTask-failed}.deprecated.json
 * - runs started before (run-fast-path's patched() marker): the same five cases .fast.json; reset,
 *   following the row: the same three resets .fast.json
 * - run-follows-row's old branch (recorded before it; the reset run ends failed, not as its row):
 *   run-reset-FirstWorkflowTask-exited.before-follows-row.json
 * Remove a shape's histories with its patch; record a new shape's with RECORD_RUN_HISTORIES=1
 * (README, Tests).
 */
import { condition, deprecatePatch, patched, allHandlersFinished } from '@temporalio/workflow';
import type { RunWorkflowInput } from './definitions';
import { handleQueryAndControls } from './run-controls';
import { RunExecution, type RunEnded, type TerminalChange } from './run-execution';
import { followContainer } from './run-follow';
import { claimAndLaunch, failLaunch } from './run-launch';
import { settle } from './run-settle';
import { failBeforeStart, waitForStartAndSlot } from './run-wait';

export { runWorkflowId } from './definitions';
export type { RunWorkflowInput };

/** Postgres steps are local activities; claim and launch are one activity (step 3). */
const FAST_PATH_PATCH = 'run-fast-path';
/**
 * The run's row is the truth (step 2). A state change that finds the row moved on without this
 * execution (an operator reset or replayed it after the run went further, or ended) makes the
 * execution follow the row: an ended run ends with the row's outcome, an active one is claimed
 * and launched again, which finds its host and container instead of making new ones. Its old
 * branch: the execution ends as it would have without the row (a waiting run fails `gone`).
 */
const FOLLOWS_ROW_PATCH = 'run-follows-row';

/**
 * scheduled → queued → pulling → running ⇄ paused → exited | failed | timeout | killed.
 * Every state change goes through transitionRunState (row + event, one transaction).
 *
 * Concurrency: a run holds a slot from `queued` (taken at dispatch) until it is terminal.
 * A run deferred with scheduled_start does NOT hold a slot while it waits: the spec's table
 * (enforced at dispatch; counts pulling, running, paused) wins over its guidance, so deferred
 * runs never block runs that are due now.
 */
export async function runWorkflow(input: RunWorkflowInput): Promise<RunEnded> {
  deprecatePatch(FAST_PATH_PATCH);
  const run = new RunExecution(input);
  handleQueryAndControls(run);

  // scheduled → queued: eligible_start, then a slot (or expired, queue_timeout).
  const waited = await waitForStartAndSlot(run);
  if (waited === 'gone' && patched(FOLLOWS_ROW_PATCH)) {
    // Past scheduled without this execution: ended, it ends so; active, it is claimed again.
    const rowEnd = await run.rowEnd();
    if (rowEnd) return rowEnd;
  } else if (waited !== 'queued') {
    return endAfter(run, await failBeforeStart(run, waited));
  }

  // queued → pulling → running (paused, for a run launched before a reset), or failed.
  const launched = await claimAndLaunch(run);
  if ('failed' in launched) return endAfter(run, await failLaunch(run, launched.failed));

  // running ⇄ paused until the container ends: exits, is stopped, killed, timed out or lost.
  await followContainer(run, launched.follower);

  // → exited | failed | timeout | killed.
  const ended = await endAfter(run, await settle(run));
  await condition(allHandlersFinished);
  return ended;
}

/** The end of the execution after its terminal change: its own, or the row's if it moved on. */
async function endAfter(run: RunExecution, change: TerminalChange): Promise<RunEnded> {
  if (change.recorded !== 'conflict' || !patched(FOLLOWS_ROW_PATCH)) return change.own;
  return (await run.rowEnd()) ?? change.own;
}
