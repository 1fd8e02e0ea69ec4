import { z } from 'zod';
import { ulid } from '../ids';
import { sql, type DatabasePool } from '../pool';

type Queryable = Pick<DatabasePool, 'query' | 'any'>;

export interface AuditRecordInput {
  tenantId: string;
  /** 'operator' for the CLI, else the key id that made the request. */
  actor: string;
  action: string;
  outcome: 'ok' | 'refused';
  target?: string | null;
  detail?: Record<string, unknown>;
}

export const auditRecordRow = z.object({
  audit_id: z.string(),
  tenant_id: z.string(),
  ts: z.string(),
  actor: z.string(),
  action: z.string(),
  outcome: z.enum(['ok', 'refused']),
  target: z.string().nullable(),
  detail: z.record(z.unknown()),
});
export type AuditRecordRow = z.infer<typeof auditRecordRow>;

export async function insertAudit(db: Queryable, record: AuditRecordInput): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO runs.audit_records (audit_id, tenant_id, actor, action, outcome, target, detail)
    VALUES (${ulid()}, ${record.tenantId}, ${record.actor}, ${record.action}, ${record.outcome},
            ${record.target ?? null}, ${sql.jsonb((record.detail ?? {}) as never)})`);
}

/** Newest first. */
export async function listAudit(
  db: Queryable,
  tenantId: string,
  page: { limit: number; offset: number },
): Promise<readonly AuditRecordRow[]> {
  return db.any(sql.type(auditRecordRow)`
    SELECT audit_id, tenant_id, ts, actor, action, outcome, target, detail FROM runs.audit_records
    WHERE tenant_id = ${tenantId} ORDER BY audit_id DESC LIMIT ${page.limit} OFFSET ${page.offset}`);
}
