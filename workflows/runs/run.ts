/**
 * The run workflow: one container run, from submit to a terminal state (the steps below; the
 * runs README, "How a run moves"). RunState is upserted for running, paused and the end.
 *
 * PATCHES, by the steps of Temporal's patching sample (1 old code alone, 2 patched() beside it,
 * 3 deprecatePatch(), 4 the call removed). The next step waits until `temporal workflow list
 * --query "WorkflowType='runWorkflow' AND ExecutionStatus='Running' AND StartTime < '<the current
 * step's deployment>'"` answers nothing in every namespace (a patched() marker without its call
 * is a nondeterminism error on replay; a deprecated one is skipped).
 * - run-fast-path: step 3; next, remove the call.
 * - run-follows-row: step 2; next, deprecate it (its old branch ends in the workflow task that
 *   takes it, so no execution is open mid-branch).
 * - run-one-activity: step 2; next, deprecate it once no execution started before it is open.
 *
 * RECORDED HISTORIES of each live shape, test/histories/runs/run-*.json (replayed with their
 * markers checked by test/replay/histories.test.ts): `.one-activity.json` new runs,
 * `.deprecated.json` runs started before run-one-activity, `.fast.json` runs carrying
 * run-fast-path's patched() marker, `.before-follows-row.json` run-follows-row's old branch. Remove a shape's histories with its patch; record a new shape's with
 * RECORD_RUN_HISTORIES=1 (README, Tests).
 */
import { condition, deprecatePatch, patched, allHandlersFinished } from '@temporalio/workflow';
import type { RunWorkflowInput } from '../../contracts/runs/run';
import { handleQueryAndControls } from './run-controls';
import { RunExecution, type RunEnded, type TerminalChange } from './run-execution';
import { followContainer } from './run-follow';
import { claimAndLaunch, failLaunch } from './run-launch';
import { launchAndFollow } from './run-launch-follow';
import { settle } from './run-settle';
import { failBeforeStart, waitForStartAndSlot } from './run-wait';

export { runWorkflowId } from '../../contracts/runs/run';
export type { RunWorkflowInput };

/** Postgres steps are local activities; claim and launch are one activity. */
const FAST_PATH_PATCH = 'run-fast-path';
/**
 * The run's row is the truth: a state change that finds the row moved on without this execution
 * (an operator reset it) follows the row: an ended run ends with the row's outcome, an active one
 * is claimed and launched again, finding its host and container. Old branch: the execution ends
 * as it would have without the row (a waiting run fails `gone`).
 */
const FOLLOWS_ROW_PATCH = 'run-follows-row';

/**
 * From the claim to the container's end is one activity (launchAndFollow), not a launch and a
 * follow with a workflow task between them. Old branch: claimAndLaunch, then followContainer.
 */
const ONE_ACTIVITY_PATCH = 'run-one-activity';

/**
 * scheduled → queued → pulling → running ⇄ paused → exited | failed | timeout | killed; each
 * change is the row and its event in one transaction. A slot is held from `queued` until
 * terminal, never while a scheduled_start is ahead: the spec's table (counting pulling, running,
 * paused) wins over its guidance, so deferred runs never block runs that are due now.
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

  // queued → pulling → running (paused, for a run launched before a reset) ⇄ paused until the
  // container ends (exits, is stopped, killed, timed out or lost), or failed.
  const launched = patched(ONE_ACTIVITY_PATCH)
    ? await launchAndFollow(run)
    : await claimAndLaunch(run);
  if ('failed' in launched) return endAfter(run, await failLaunch(run, launched.failed));
  if ('follower' in launched) await followContainer(run, launched.follower);

  // → exited | failed | timeout | killed.
  const ended = await endAfter(run, await settle(run));
  // A control still waiting on a lost host never finishes: the run ends without it.
  if (run.hostLost === null) await condition(allHandlersFinished);
  return ended;
}

/** The end of the execution after its terminal change: its own, or the row's if it moved on. */
async function endAfter(run: RunExecution, change: TerminalChange): Promise<RunEnded> {
  if (change.recorded !== 'conflict' || !patched(FOLLOWS_ROW_PATCH)) return change.own;
  return (await run.rowEnd()) ?? change.own;
}
