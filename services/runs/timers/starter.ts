import type { PlatformDeps } from '../../../platform/deps';
import { createOutboxDispatcher, type OutboxSource } from '../../../platform/outbox';
import { dueTimerStarts, markTimerWorkflowsStarted } from '../../../db/runs/timers';
import { executionSearchAttributes } from '../../../contracts/shared/search-attributes';
import {
  TIMER_WORKFLOW_TYPE,
  timerWorkflowId,
  type TimerWorkflowInput,
} from '../../../contracts/runs/timer';
import { timerSummary } from '../../../contracts/runs/summaries';
import { runsQueue } from '../webhooks/starter';

/** A timer younger than this is still being started by the process that stored it. */
const TIMER_SWEEP_GRACE_SECONDS = 3;

/**
 * Timer starts as an outbox, as webhook deliveries are (webhooks/starter.ts): a pending timer
 * row whose workflow Temporal does not have yet (workflow_started false) is started as
 * timer/<timer_id> on the runs queue of the deployment that made it (another's is not ours).
 * A timer cancelled before its start needs none: the sweep leaves it.
 */
function timerStarts(deps: PlatformDeps): OutboxSource<TimerWorkflowInput> {
  const queue = runsQueue(deps);
  return {
    name: 'timer starts',
    keyOf: (input) => input.timerId,
    due: (limit, skip) =>
      dueTimerStarts(deps.pool, { queue, graceSeconds: TIMER_SWEEP_GRACE_SECONDS, limit, skip }),
    workflowOf: (input) => ({
      workflowType: TIMER_WORKFLOW_TYPE,
      options: {
        workflowId: timerWorkflowId(input.timerId),
        taskQueue: queue,
        args: [input],
        typedSearchAttributes: executionSearchAttributes(input.tenantId, 'runs'),
        ...timerSummary(input),
      },
    }),
    markStarted: (timerIds) => markTimerWorkflowsStarted(deps.pool, timerIds),
  };
}

/** Starts timer workflows off the request path (platform/outbox.ts). */
export function createTimerStarter(deps: PlatformDeps) {
  const dispatcher = createOutboxDispatcher(deps, timerStarts(deps));
  return {
    ...dispatcher,
    /** After the timer's transaction commits. */
    startInBackground: (input: TimerWorkflowInput) => dispatcher.enqueue(input),
  };
}
export type TimerStarter = ReturnType<typeof createTimerStarter>;
