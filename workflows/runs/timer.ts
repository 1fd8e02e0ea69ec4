import {
  CancellationScope,
  isCancellation,
  proxyLocalActivities,
  sleep,
} from '@temporalio/workflow';
import type { TimerActivities, TimerFireResult } from '../../activities/runs/timers';
import { localPostgresProfile } from '../shared/activity-profiles';
import type { TimerWorkflowInput } from '../../contracts/runs/timer';

/** fireTimer's outcome, or `cancelled` when the execution was cancelled while it slept. */
export type TimerWorkflowResult = TimerFireResult;

const db = proxyLocalActivities<TimerActivities>(localPostgresProfile);

/**
 * A timer: a durable sleep until fireAt on the workflow clock (Temporal's timer: nothing polls,
 * and a worker restart loses nothing), then fireTimer, which writes the fire and its
 * `timer.fired` notice only if the row is still pending. A fireAt already past fires at once.
 * A cancellation while it sleeps (DELETE /timers/{id}, best effort, or an operator's `temporal
 * workflow cancel`) ends the execution without firing, the row cancelled if it is still pending.
 * Once the sleep is over the row decides: a DELETE that committed first is found cancelled.
 */
export async function timerWorkflow(input: TimerWorkflowInput): Promise<TimerWorkflowResult> {
  const waitMs = Date.parse(input.fireAt) - Date.now();
  try {
    if (waitMs > 0) await sleep(waitMs);
  } catch (error) {
    if (!isCancellation(error)) throw error;
    // DELETE has cancelled the row already; an operator's cancel has not: the same end either way.
    await CancellationScope.nonCancellable(() =>
      db.cancelPendingTimer({ timerId: input.timerId, tenantId: input.tenantId }),
    );
    return { outcome: 'cancelled' };
  }
  return CancellationScope.nonCancellable(() => db.fireTimer({ timerId: input.timerId }));
}
