import { z } from 'zod';
import { sql, type DatabasePool } from '../pool';

type Queryable = Pick<DatabasePool, 'one' | 'maybeOne' | 'query'>;

/** A tenant's quotas, its columns in QUOTA_FIELDS' order (the SELECT's and RETURNING's). */
export const tenantQuotasRow = z.object({
  max_concurrent_runs: z.number(),
  max_daily_runs: z.number(),
  max_timeout_seconds: z.number(),
  /** numeric: a decimal string. */
  max_cpu_cores: z.string(),
  max_memory_mb: z.number(),
  max_queue_seconds: z.number(),
  working_hours_tjp: z.string().nullable(),
  retention_days: z.number(),
  max_nodes_per_workflow: z.number(),
  max_concurrent_workflows: z.number(),
  max_webhook_endpoints: z.number(),
  max_webhook_payload_bytes: z.number(),
  max_pending_timers: z.number(),
  max_schedules: z.number(),
  max_triggers: z.number(),
  max_templates: z.number(),
});
export type TenantQuotasRow = z.infer<typeof tenantQuotasRow>;

export const QUOTA_FIELDS = [
  'max_concurrent_runs',
  'max_daily_runs',
  'max_timeout_seconds',
  'max_cpu_cores',
  'max_memory_mb',
  'max_queue_seconds',
  'working_hours_tjp',
  'retention_days',
  'max_nodes_per_workflow',
  'max_concurrent_workflows',
  'max_webhook_endpoints',
  'max_webhook_payload_bytes',
  'max_pending_timers',
  'max_schedules',
  'max_triggers',
  'max_templates',
] as const satisfies readonly (keyof TenantQuotasRow)[];

const COLUMNS = sql.join(
  QUOTA_FIELDS.map((f) => sql.identifier([f])),
  sql.fragment`, `,
);

export async function findQuotas(db: Queryable, tenantId: string): Promise<TenantQuotasRow> {
  return db.one(sql.type(tenantQuotasRow)`
    SELECT ${COLUMNS} FROM runs.tenant_quotas WHERE tenant_id = ${tenantId}`);
}

/** Updates only the fields given; returns the whole row after the update. */
export async function updateQuotas(
  db: Queryable,
  tenantId: string,
  changes: Partial<Record<(typeof QUOTA_FIELDS)[number], string | number | null>>,
): Promise<TenantQuotasRow> {
  const sets = [sql.fragment`updated_at = date_trunc('milliseconds', now())`];
  for (const field of QUOTA_FIELDS) {
    if (!(field in changes)) continue;
    const value = changes[field];
    sets.push(sql.fragment`${sql.identifier([field])} = ${value === undefined ? null : value}`);
  }
  return db.one(sql.type(tenantQuotasRow)`
    UPDATE runs.tenant_quotas SET ${sql.join(sets, sql.fragment`, `)}
    WHERE tenant_id = ${tenantId} RETURNING ${COLUMNS}`);
}
