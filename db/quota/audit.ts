import { z } from 'zod';
import { ulid } from '../ids';
import { sql } from '../pool';
import type { Queryable } from './queryable';

export interface AuditInput {
  tenantId: string | null;
  actor: string;
  keyRowId: string | null;
  action: string;
  entityType: string;
  entityId: string | null;
  before: unknown;
  after: unknown;
}

export const auditRow = z.object({
  id: z.string(),
  /** bigint: a decimal string. */
  seq: z.string(),
  actor: z.string(),
  action: z.string(),
  entity_type: z.string(),
  entity_id: z.string().nullable(),
  /** jsonb, null when absent. */
  before: z.unknown(),
  after: z.unknown(),
  at: z.string(),
});
export type AuditRow = z.infer<typeof auditRow>;

const jsonOrNull = (value: unknown) =>
  value === null || value === undefined ? null : sql.jsonb(value as never);

/** Written in the transaction of the change it records. */
export async function insertAudit(db: Queryable, entry: AuditInput): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO quota.audit (id, tenant_id, actor, key_row_id, action, entity_type, entity_id, before, after)
    VALUES (${ulid()}, ${entry.tenantId}, ${entry.actor}, ${entry.keyRowId}, ${entry.action},
            ${entry.entityType}, ${entry.entityId}, ${jsonOrNull(entry.before)}, ${jsonOrNull(entry.after)})`);
}

export interface AuditFilter {
  actor?: string;
  action?: string;
  from?: string;
  to?: string;
  /** The seq of the last entry of the previous page. */
  afterSeq?: string;
  limit: number;
}

/** A tenant's audit in seq order, one page (limit + 1 rows: the extra says a next page exists). */
export async function listAudit(
  db: Queryable,
  tenantId: string,
  filter: AuditFilter,
): Promise<readonly AuditRow[]> {
  const where = [sql.fragment`tenant_id = ${tenantId}`];
  if (filter.actor !== undefined) where.push(sql.fragment`actor = ${filter.actor}`);
  if (filter.action !== undefined) where.push(sql.fragment`action = ${filter.action}`);
  if (filter.from !== undefined) where.push(sql.fragment`at >= ${filter.from}::timestamptz`);
  if (filter.to !== undefined) where.push(sql.fragment`at < ${filter.to}::timestamptz`);
  if (filter.afterSeq !== undefined) where.push(sql.fragment`seq > ${filter.afterSeq}::bigint`);
  return db.any(sql.type(auditRow)`
    SELECT id, seq, actor, action, entity_type, entity_id, before, after, at FROM quota.audit
    WHERE ${sql.join(where, sql.fragment` AND `)}
    ORDER BY seq LIMIT ${filter.limit + 1}`);
}
