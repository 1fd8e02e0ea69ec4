import type { PlatformDeps } from '../../../platform/deps';
import { createOutboxDispatcher, type OutboxSource } from '../../../platform/outbox';
import { sql } from '../../../db/pool';
import { executionSearchAttributes } from '../../../workflows/shared/search-attributes';
import {
  TIMER_WORKFLOW_TYPE,
  timerWorkflowId,
  type TimerWorkflowInput,
} from '../../../workflows/runs/timer-definitions';
import { timerSummary } from '../../../workflows/runs/summaries';
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
    due: async (limit, skip) =>
      (await deps.pool.any(sql.unsafe`
        SELECT timer_id AS "timerId", tenant_id AS "tenantId", fire_at AS "fireAt"
        FROM runs.timers
        WHERE NOT workflow_started AND state = 'pending' AND workflow_task_queue = ${queue}
          AND created_at < now() - make_interval(secs => ${TIMER_SWEEP_GRACE_SECONDS})
          AND NOT (timer_id = ANY(${sql.array(skip, 'text')}))
        ORDER BY created_at LIMIT ${limit}`)) as TimerWorkflowInput[],
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
    markStarted: async (timerIds) => {
      await deps.pool.query(sql.unsafe`
        UPDATE runs.timers SET workflow_started = true
        WHERE timer_id = ANY(${sql.array(timerIds, 'text')})`);
    },
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
