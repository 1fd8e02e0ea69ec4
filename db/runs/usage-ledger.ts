import { ulid } from '../ids';
import { sql, type DatabasePool } from '../pool';

/**
 * runs.usage_ledger: the seconds charged to metered runs before metering moved to the quota
 * service (a run's `charge` at submit, its `refund` of what it did not use). Nothing is charged
 * here any more; a run charged before still has its refund made when it ends.
 */

/** A run's charge refunds its unused seconds, once (unique on track_id, kind); a run never charged has none. */
export async function refundLegacyCharge(
  db: Pick<DatabasePool, 'query'>,
  trackId: string,
  usedSeconds: number,
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO runs.usage_ledger (entry_id, tenant_id, key_id, track_id, kind, seconds)
    SELECT ${ulid()}, tenant_id, key_id, track_id, 'refund', GREATEST(0, seconds - ${usedSeconds})
    FROM runs.usage_ledger WHERE track_id = ${trackId} AND kind = 'charge'
    ON CONFLICT (track_id, kind) DO NOTHING`);
}
