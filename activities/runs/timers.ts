import type { DatabasePool } from '../../db/pool';
import { ulid } from '../../db/ids';
import { cancelTimer, fireTimer } from '../../db/runs/timers';

/** What fireTimer did: the row decides, so a cancelled or already fired timer is left alone. */
export type TimerFireResult =
  | { outcome: 'fired'; eventId: string; fireDelaySeconds: string }
  | { outcome: 'already_fired' }
  | { outcome: 'cancelled' }
  | { outcome: 'missing' };

export function createTimerActivities(deps: { pool: DatabasePool }) {
  return {
    /**
     * Fires the timer: pending → fired with its `timer.fired` notice, in one statement (the
     * publisher makes the deliveries from the notice). Idempotent: a second call finds it fired
     * and writes nothing; a cancelled timer is left cancelled.
     */
    async fireTimer(input: { timerId: string }): Promise<TimerFireResult> {
      const result = await fireTimer(deps.pool, input.timerId, ulid());
      if (result.outcome === 'fired') return result;
      if (result.outcome === 'missing') return { outcome: 'missing' };
      return result.state === 'cancelled' ? { outcome: 'cancelled' } : { outcome: 'already_fired' };
    },
    /**
     * Cancels the timer if it is still pending (its execution was cancelled by an operator
     * rather than by DELETE, which has already cancelled the row): one conditional UPDATE, so a
     * fired timer stays fired. Idempotent.
     */
    async cancelPendingTimer(input: { timerId: string; tenantId: string }): Promise<void> {
      await cancelTimer(deps.pool, input.tenantId, input.timerId);
    },
  };
}
export type TimerActivities = ReturnType<typeof createTimerActivities>;
