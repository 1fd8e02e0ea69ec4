import { ulid } from 'ulid';
import type { DatabasePool } from '../../db/pool';
import { sql } from '../../db/pool';
import { Context } from '@temporalio/activity';
import { runWorkflowId, slotFreedSignal } from '../../workflows/runs/definitions';
import {
  transitionRun,
  tryTakeSlot,
  waitingHeads,
  type Transition,
  type TransitionOutcome,
} from '../../db/runs/runs';

/**
 * The Postgres activities of the run workflow. `transitionRunState` is the ONE way a run's
 * state changes: row and event in one transaction, conditional on the expected from-state,
 * keyed by an event id the workflow made (so a retry is a no-op).
 */
export function createRunActivities(deps: { pool: DatabasePool }) {
  return {
    async transitionRunState(t: Transition): Promise<TransitionOutcome> {
      return transitionRun(deps.pool, t);
    },

    async takeRunSlot(input: { trackId: string; eventId: string; maxConcurrent: number | null }) {
      return tryTakeSlot(deps.pool, input);
    },

    /**
     * After a run gave its slot back: signals the tenant's longest-waiting eligible runs, as
     * many as there are free slots, so they ask for one now. Best effort (a missed signal is
     * covered by the waiting run's fallback poll).
     */
    async wakeWaitingRuns(input: {
      tenantId: string;
      maxConcurrent: number | null;
    }): Promise<number> {
      const heads = await waitingHeads(deps.pool, input.tenantId, input.maxConcurrent);
      const client = Context.current().client;
      await Promise.all(
        heads.map((trackId) =>
          client.workflow
            .getHandle(runWorkflowId(trackId))
            .signal(slotFreedSignal)
            .catch(() => undefined),
        ),
      );
      return heads.length;
    },

    /** Metered keys: refunds the unused part of the up-front charge, once per run. */
    async refundUnusedSeconds(input: { trackId: string; usedSeconds: number }): Promise<void> {
      await deps.pool.query(sql.unsafe`
        INSERT INTO runs.usage_ledger (entry_id, tenant_id, key_id, track_id, kind, seconds)
        SELECT ${ulid()}, tenant_id, key_id, track_id, 'refund', GREATEST(0, seconds - ${Math.ceil(input.usedSeconds)})
        FROM runs.usage_ledger WHERE track_id = ${input.trackId} AND kind = 'charge'
        ON CONFLICT (track_id, kind) DO NOTHING`);
    },
  };
}
export type RunActivities = ReturnType<typeof createRunActivities>;
