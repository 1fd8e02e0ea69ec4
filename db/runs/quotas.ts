import { sql, type DatabasePool } from '../pool';

type Queryable = Pick<DatabasePool, 'one' | 'maybeOne' | 'query'>;

export interface TenantQuotasRow {
  max_concurrent_runs: number;
  max_daily_runs: number;
  max_timeout_seconds: number;
  /** numeric: a decimal string. */
  max_cpu_cores: string;
  max_memory_mb: number;
  max_queue_seconds: number;
  working_hours_tjp: string | null;
  retention_days: number;
  max_nodes_per_workflow: number;
  max_concurrent_workflows: number;
  max_webhook_endpoints: number;
  max_webhook_payload_bytes: number;
  max_pending_timers: number;
  max_schedules: number;
  max_triggers: number;
  max_templates: number;
}

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
  const row: unknown = await db.one(sql.unsafe`
    SELECT ${COLUMNS} FROM runs.tenant_quotas WHERE tenant_id = ${tenantId}`);
  return row as TenantQuotasRow;
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
  const row: unknown = await db.one(sql.unsafe`
    UPDATE runs.tenant_quotas SET ${sql.join(sets, sql.fragment`, `)}
    WHERE tenant_id = ${tenantId} RETURNING ${COLUMNS}`);
  return row as TenantQuotasRow;
}
