import { sql } from '../pool';
import type { Queryable } from './queryable';

export interface ReservationItem {
  resource: string;
  amount: string;
}

export interface ReservationHold {
  policy_id: string;
  resource: string;
  window_key: string;
  /** 'fast': counted in the subject's Redis state; absent: a Postgres counter row. */
  mode?: 'fast';
}

export interface ReservationRow {
  id: string;
  tenant_id: string;
  subject: string;
  status: 'held' | 'committed' | 'released' | 'expired';
  items: ReservationItem[];
  holds: ReservationHold[];
  expires_at: string;
  event_id: string;
  settle_event_id: string | null;
  adjustments: unknown[] | null;
  created_at: string;
  settled_at: string | null;
  /** Whether expires_at has passed by the database's clock. */
  due: boolean;
}

const COLUMNS = sql.fragment`id, tenant_id, subject, status, items, holds, expires_at, event_id,
  settle_event_id, adjustments, created_at, settled_at, expires_at <= now() AS due`;

export async function insertReservation(
  db: Queryable,
  row: Pick<ReservationRow, 'id' | 'tenant_id' | 'subject' | 'items' | 'holds' | 'event_id'> & {
    ttlSeconds: number;
    metadata: Record<string, unknown> | null;
  },
): Promise<ReservationRow> {
  return (await db.one(sql.unsafe`
    INSERT INTO quota.reservations (id, tenant_id, subject, items, holds, expires_at, event_id, metadata)
    VALUES (${row.id}, ${row.tenant_id}, ${row.subject}, ${sql.jsonb(row.items as never)},
            ${sql.jsonb(row.holds as never)}, now() + make_interval(secs => ${row.ttlSeconds}),
            ${row.event_id}, ${row.metadata === null ? null : sql.jsonb(row.metadata as never)})
    RETURNING ${COLUMNS}`)) as ReservationRow;
}

export async function findReservation(
  db: Queryable,
  tenantId: string | null,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ReservationRow | null> {
  const tenant = tenantId === null ? sql.fragment`true` : sql.fragment`tenant_id = ${tenantId}`;
  return (await db.maybeOne(sql.unsafe`
    SELECT ${COLUMNS} FROM quota.reservations WHERE id = ${id} AND ${tenant}
    ${options.lock ? sql.fragment`FOR UPDATE` : sql.fragment``}`)) as ReservationRow | null;
}

export async function settleReservation(
  db: Queryable,
  id: string,
  change: {
    status: 'committed' | 'released' | 'expired';
    eventId: string;
    /** JSON text (exact integers): platform/exact-json.ts. */
    adjustmentsJson?: string;
  },
): Promise<ReservationRow> {
  return (await db.one(sql.unsafe`
    UPDATE quota.reservations SET status = ${change.status}, settle_event_id = ${change.eventId},
      adjustments = ${change.adjustmentsJson ?? null}::jsonb,
      settled_at = now()
    WHERE id = ${id} RETURNING ${COLUMNS}`)) as ReservationRow;
}

/** Held reservations past expires_at, oldest first. */
export async function dueReservations(db: Queryable, limit: number): Promise<string[]> {
  return (await db.anyFirst(sql.unsafe`
    SELECT id FROM quota.reservations WHERE status = 'held' AND expires_at <= now()
    ORDER BY expires_at LIMIT ${limit}`)) as string[];
}
