import { z } from 'zod';
import { sql } from '../pool';
import type { Queryable } from './queryable';

export const ledgerRow = z.object({
  id: z.string(),
  event_id: z.string(),
  subject: z.string(),
  resource: z.string().nullable(),
  /** int8: a decimal string. */
  amount: z.string(),
  entry_type: z.string(),
  idempotency_key: z.string().nullable(),
  reservation_id: z.string().nullable(),
  strict_deferred: z.boolean(),
  metadata: z.record(z.unknown()).nullable(),
  occurred_at: z.string(),
});
export type LedgerRow = z.infer<typeof ledgerRow>;

export interface LedgerFilter {
  subject?: string;
  /** Only subjects starting with this (the key's subject_prefix). */
  subjectPrefix?: string | null;
  resource?: string;
  from?: string;
  to?: string;
}

const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

function conditions(tenantId: string, filter: LedgerFilter) {
  const where = [sql.fragment`tenant_id = ${tenantId}`];
  if (filter.subject !== undefined) where.push(sql.fragment`subject = ${filter.subject}`);
  if (filter.subjectPrefix)
    where.push(sql.fragment`subject LIKE ${likePrefix(filter.subjectPrefix)}`);
  if (filter.resource !== undefined) where.push(sql.fragment`resource = ${filter.resource}`);
  if (filter.from !== undefined)
    where.push(sql.fragment`occurred_at >= ${filter.from}::timestamptz`);
  if (filter.to !== undefined) where.push(sql.fragment`occurred_at < ${filter.to}::timestamptz`);
  return sql.join(where, sql.fragment` AND `);
}

/** A page of a tenant's ledger in id order (limit + 1 rows: the extra says a next page exists). */
export async function listLedger(
  db: Queryable,
  tenantId: string,
  filter: LedgerFilter & { afterId?: string; limit: number },
): Promise<readonly LedgerRow[]> {
  const after =
    filter.afterId === undefined
      ? sql.fragment`true`
      : sql.fragment`id > ${filter.afterId}::bigint`;
  return db.any(sql.type(ledgerRow)`
    SELECT id::text, event_id, subject, resource, amount, entry_type, idempotency_key, reservation_id,
           strict_deferred, metadata, occurred_at
    FROM quota.ledger_entries WHERE ${conditions(tenantId, filter)} AND ${after}
    ORDER BY id LIMIT ${filter.limit + 1}`);
}

export const summaryRowDb = z.object({
  start: z.string(),
  subject: z.string(),
  resource: z.string().nullable(),
  amount: z.string(),
  consumed: z.string(),
  refunded: z.string(),
  entries: z.string(),
});
export type SummaryRowDb = z.infer<typeof summaryRowDb>;

/** Net amounts per UTC hour or day, subject and resource, oldest first (at most `limit` rows). */
export async function summarizeLedger(
  db: Queryable,
  tenantId: string,
  filter: LedgerFilter & { granularity: 'hour' | 'day'; limit: number },
): Promise<readonly SummaryRowDb[]> {
  return db.any(sql.type(summaryRowDb)`
    SELECT date_trunc(${filter.granularity}, occurred_at, 'UTC') AS start, subject, resource,
           sum(amount)::text AS amount,
           coalesce(sum(amount) FILTER (WHERE amount > 0), 0)::text AS consumed,
           (-coalesce(sum(amount) FILTER (WHERE amount < 0), 0))::text AS refunded,
           count(*)::text AS entries
    FROM quota.ledger_entries WHERE ${conditions(tenantId, filter)}
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 LIMIT ${filter.limit}`);
}
