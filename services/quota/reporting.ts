import type { DatabasePool } from '../../db/pool';
import { listAudit, type AuditFilter, type AuditRow } from '../../db/quota/audit';
import {
  listLedger,
  summarizeLedger,
  type LedgerFilter,
  type LedgerRow,
} from '../../db/quota/ledger';
import { checkSubject } from './constraints';
import type { Principal } from './credentials';
import { exactInteger } from '../../platform/exact-json';
import { tenantOf } from './keys';

type Deps = { pool: DatabasePool };

export interface Page<T> {
  entries: T[];
  next_cursor: string | null;
}

/** limit + 1 rows read: the extra one says a next page exists, after the last one shown. */
export function pageOf<T>(
  rows: readonly T[],
  limit: number,
  cursorOf: (row: T) => string,
): Page<T> {
  const entries = rows.slice(0, limit);
  const last = entries[entries.length - 1];
  return { entries, next_cursor: rows.length > limit && last ? cursorOf(last) : null };
}

export type AuditEntry = Omit<AuditRow, 'seq'> & { seq: number };

/** The tenant's admin audit in seq order (seq is a bigint identity: exact as a JSON number far past any real count). */
export async function readAudit(
  deps: Deps,
  principal: Principal,
  query: Omit<AuditFilter, 'afterSeq'> & { cursor?: string },
): Promise<Page<AuditEntry>> {
  const { cursor, ...filter } = query;
  const rows = await listAudit(deps.pool, tenantOf(principal), { ...filter, afterSeq: cursor });
  const page = pageOf(rows, query.limit, (row) => row.seq);
  return { ...page, entries: page.entries.map((row) => ({ ...row, seq: Number(row.seq) })) };
}

/** A ledger read is bounded by the key's subject_prefix: a subject outside it is refused. */
function ledgerScope(principal: Principal, subject: string | undefined) {
  if (subject !== undefined) checkSubject(principal, subject);
  return {
    tenantId: tenantOf(principal),
    subjectPrefix: principal.constraints?.subject_prefix ?? null,
  };
}

export async function readLedger(
  deps: Deps,
  principal: Principal,
  query: LedgerFilter & { cursor?: string; limit: number },
): Promise<Page<Omit<LedgerRow, 'amount'> & { amount: number | bigint }>> {
  const { tenantId, subjectPrefix } = ledgerScope(principal, query.subject);
  const { cursor, ...filter } = query;
  const rows = await listLedger(deps.pool, tenantId, { ...filter, subjectPrefix, afterId: cursor });
  const page = pageOf(rows, query.limit, (row) => row.id);
  return {
    ...page,
    entries: page.entries.map((row) => ({ ...row, amount: exactInteger(row.amount) })),
  };
}

/** Usage summary rows are at most this many (the oldest first): narrow the range for more. */
export const SUMMARY_ROWS_MAX = 10_000;
const DAY_MS = 86_400_000;

export async function summarizeUsage(
  deps: Deps,
  principal: Principal,
  query: LedgerFilter & { granularity: 'hour' | 'day' },
) {
  const { tenantId, subjectPrefix } = ledgerScope(principal, query.subject);
  const to = query.to ?? new Date().toISOString();
  const from = query.from ?? new Date(Date.parse(to) - 30 * DAY_MS).toISOString();
  const rows = await summarizeLedger(deps.pool, tenantId, {
    ...query,
    from,
    to,
    subjectPrefix,
    limit: SUMMARY_ROWS_MAX,
  });
  const stepMs = query.granularity === 'hour' ? 3_600_000 : DAY_MS;
  return rows.map((row) => ({
    granularity: query.granularity,
    start: row.start,
    end: new Date(Date.parse(row.start) + stepMs).toISOString(),
    subject: row.subject,
    resource: row.resource,
    consumed: exactInteger(row.consumed),
    refunded: exactInteger(row.refunded),
    net: exactInteger(row.amount),
    entries: Number(row.entries),
  }));
}
