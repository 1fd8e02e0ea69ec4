import type { DatabasePool } from '../../db/pool';
import { listAudit, type AuditFilter, type AuditRow } from '../../db/quota/audit';
import type { Principal } from './credentials';
import { tenantOf } from './keys';

type Deps = { pool: DatabasePool };

export interface Page<T> {
  entries: T[];
  next_cursor: string | null;
}

/** limit + 1 rows read: the extra one says a next page exists, after the last one shown. */
export function pageOf<T>(rows: T[], limit: number, cursorOf: (row: T) => string): Page<T> {
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
