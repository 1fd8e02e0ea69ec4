import { sql } from '../pool';
import type { Queryable } from './queryable';

export interface LedgerRow {
  id: string;
  event_id: string;
  subject: string;
  resource: string | null;
  amount: string;
  entry_type: string;
  idempotency_key: string | null;
  reservation_id: string | null;
  strict_deferred: boolean;
  metadata: Record<string, unknown> | null;
  occurred_at: string;
}

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
): Promise<LedgerRow[]> {
  const after =
    filter.afterId === undefined
      ? sql.fragment`true`
      : sql.fragment`id > ${filter.afterId}::bigint`;
  return (await db.any(sql.unsafe`
    SELECT id::text, event_id, subject, resource, amount, entry_type, idempotency_key, reservation_id,
           strict_deferred, metadata, occurred_at
    FROM quota.ledger_entries WHERE ${conditions(tenantId, filter)} AND ${after}
    ORDER BY id LIMIT ${filter.limit + 1}`)) as LedgerRow[];
}

export interface SummaryRowDb {
  start: string;
  subject: string;
  resource: string | null;
  amount: string;
  consumed: string;
  refunded: string;
  entries: string;
}

/** Net amounts per UTC hour or day, subject and resource, oldest first (at most `limit` rows). */
export async function summarizeLedger(
  db: Queryable,
  tenantId: string,
  filter: LedgerFilter & { granularity: 'hour' | 'day'; limit: number },
): Promise<SummaryRowDb[]> {
  return (await db.any(sql.unsafe`
    SELECT date_trunc(${filter.granularity}, occurred_at, 'UTC') AS start, subject, resource,
           sum(amount)::text AS amount,
           coalesce(sum(amount) FILTER (WHERE amount > 0), 0)::text AS consumed,
           (-coalesce(sum(amount) FILTER (WHERE amount < 0), 0))::text AS refunded,
           count(*)::text AS entries
    FROM quota.ledger_entries WHERE ${conditions(tenantId, filter)}
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 LIMIT ${filter.limit}`)) as SummaryRowDb[];
}
