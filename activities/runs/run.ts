import { ulid } from 'ulid';
import type { DatabasePool } from '../../db/pool';
import { sql } from '../../db/pool';
import {
  transitionRun,
  tryTakeSlot,
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
