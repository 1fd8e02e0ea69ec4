import { z } from 'zod';
import { sql } from '../pool';
import type { Queryable } from './queryable';

export const reservationItem = z.object({
  resource: z.string(),
  /** A decimal string. */
  amount: z.string(),
});
export type ReservationItem = z.infer<typeof reservationItem>;

export const reservationHold = z.object({
  policy_id: z.string(),
  resource: z.string(),
  window_key: z.string(),
  /** 'fast': counted in the subject's Redis state; absent: a Postgres counter row. */
  mode: z.literal('fast').optional(),
});
export type ReservationHold = z.infer<typeof reservationHold>;

export const reservationRow = z.object({
  id: z.string(),
  tenant_id: z.string(),
  subject: z.string(),
  status: z.enum(['held', 'committed', 'released', 'expired']),
  items: z.array(reservationItem),
  holds: z.array(reservationHold),
  expires_at: z.string(),
  event_id: z.string(),
  settle_event_id: z.string().nullable(),
  adjustments: z.array(z.unknown()).nullable(),
  created_at: z.string(),
  settled_at: z.string().nullable(),
  /** Whether expires_at has passed by the database's clock. */
  due: z.boolean(),
});
export type ReservationRow = z.infer<typeof reservationRow>;

const COLUMNS = sql.fragment`id, tenant_id, subject, status, items, holds, expires_at, event_id,
  settle_event_id, adjustments, created_at, settled_at, expires_at <= now() AS due`;

export async function insertReservation(
  db: Queryable,
  row: Pick<ReservationRow, 'id' | 'tenant_id' | 'subject' | 'items' | 'holds' | 'event_id'> & {
    ttlSeconds: number;
    metadata: Record<string, unknown> | null;
  },
): Promise<ReservationRow> {
  return db.one(sql.type(reservationRow)`
    INSERT INTO quota.reservations (id, tenant_id, subject, items, holds, expires_at, event_id, metadata)
    VALUES (${row.id}, ${row.tenant_id}, ${row.subject}, ${sql.jsonb(row.items as never)},
            ${sql.jsonb(row.holds as never)}, now() + make_interval(secs => ${row.ttlSeconds}),
            ${row.event_id}, ${row.metadata === null ? null : sql.jsonb(row.metadata as never)})
    RETURNING ${COLUMNS}`);
}

export async function findReservation(
  db: Queryable,
  tenantId: string | null,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ReservationRow | null> {
  const tenant = tenantId === null ? sql.fragment`true` : sql.fragment`tenant_id = ${tenantId}`;
  return db.maybeOne(sql.type(reservationRow)`
    SELECT ${COLUMNS} FROM quota.reservations WHERE id = ${id} AND ${tenant}
    ${options.lock ? sql.fragment`FOR UPDATE` : sql.fragment``}`);
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
  return db.one(sql.type(reservationRow)`
    UPDATE quota.reservations SET status = ${change.status}, settle_event_id = ${change.eventId},
      adjustments = ${change.adjustmentsJson ?? null}::jsonb,
      settled_at = now()
    WHERE id = ${id} RETURNING ${COLUMNS}`);
}

/** Held reservations past expires_at, oldest first. */
export async function dueReservations(db: Queryable, limit: number): Promise<readonly string[]> {
  return db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM quota.reservations WHERE status = 'held' AND expires_at <= now()
    ORDER BY expires_at LIMIT ${limit}`);
}
