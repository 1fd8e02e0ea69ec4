import { z } from 'zod';
import { sql } from '../pool';
import type { Queryable } from './queryable';

const TENANT_STATUSES = ['active', 'suspended'] as const;
export type TenantStatus = (typeof TENANT_STATUSES)[number];
const BOOTSTRAP_STATES = ['pending', 'running', 'done', 'failed'] as const;
export type BootstrapState = (typeof BOOTSTRAP_STATES)[number];

export const tenantRow = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(TENANT_STATUSES),
  bootstrap_state: z.enum(BOOTSTRAP_STATES),
  bootstrap_attempts: z.number(),
  bootstrap_error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  suspended_at: z.string().nullable(),
});
export type TenantRow = z.infer<typeof tenantRow>;

const COLUMNS = sql.fragment`id, name, status, bootstrap_state, bootstrap_attempts, bootstrap_error,
  created_at, updated_at, suspended_at`;

/** A new tenant, its bootstrap asked of the workflows on `bootstrapQueue`. */
export async function insertTenant(
  db: Queryable,
  tenant: { id: string; name: string; bootstrapQueue: string },
): Promise<TenantRow> {
  return db.one(sql.type(tenantRow)`
    INSERT INTO quota.tenants (id, name, bootstrap_queue)
    VALUES (${tenant.id}, ${tenant.name}, ${tenant.bootstrapQueue}) RETURNING ${COLUMNS}`);
}

export async function findTenant(
  db: Queryable,
  id: string,
  options: { lock?: boolean } = {},
): Promise<TenantRow | null> {
  const lock = options.lock ? sql.fragment`FOR UPDATE` : sql.fragment``;
  return db.maybeOne(sql.type(tenantRow)`
    SELECT ${COLUMNS} FROM quota.tenants WHERE id = ${id} ${lock}`);
}

/** Oldest first. */
export async function listTenants(db: Queryable): Promise<readonly TenantRow[]> {
  return db.any(sql.type(tenantRow)`
    SELECT ${COLUMNS} FROM quota.tenants ORDER BY created_at, id`);
}

export async function updateTenant(
  db: Queryable,
  id: string,
  change: { name?: string; status?: TenantStatus },
): Promise<TenantRow> {
  return db.one(sql.type(tenantRow)`
    UPDATE quota.tenants SET
      name = coalesce(${change.name ?? null}, name),
      status = coalesce(${change.status ?? null}, status),
      suspended_at = CASE
        WHEN ${change.status ?? null}::text = 'suspended' AND status <> 'suspended' THEN now()
        WHEN ${change.status ?? null}::text = 'active' THEN NULL
        ELSE suspended_at END,
      updated_at = now()
    WHERE id = ${id} RETURNING ${COLUMNS}`);
}

/** The bootstrap's progress, as its workflow reports it. */
export async function setBootstrapState(
  db: Queryable,
  id: string,
  state: BootstrapState,
  error: string | null = null,
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE quota.tenants SET bootstrap_state = ${state}, bootstrap_error = ${error},
      bootstrap_attempts = bootstrap_attempts + (${state}::text = 'running')::int, updated_at = now()
    WHERE id = ${id}`);
}

/** Asks for a (re-)run of the bootstrap: the outbox starts its workflow. */
export async function requestBootstrap(
  db: Queryable,
  id: string,
  bootstrapQueue: string,
): Promise<TenantRow> {
  return db.one(sql.type(tenantRow)`
    UPDATE quota.tenants SET bootstrap_state = 'pending', bootstrap_error = NULL,
      bootstrap_queue = ${bootstrapQueue}, bootstrap_started_at = NULL, updated_at = now()
    WHERE id = ${id} RETURNING ${COLUMNS}`);
}

/** Tenants whose bootstrap workflow on `queue` is asked for and not yet started. */
export async function dueBootstraps(
  db: Queryable,
  queue: string,
  limit: number,
  skip: string[],
): Promise<string[]> {
  const ids = await db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM quota.tenants
    WHERE bootstrap_state IN ('pending', 'running') AND bootstrap_started_at IS NULL
      AND bootstrap_queue = ${queue} AND NOT (id = ANY(${sql.array(skip, 'text')}))
    ORDER BY created_at LIMIT ${limit}`);
  return [...ids];
}

export async function markBootstrapsStarted(db: Queryable, ids: string[]): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE quota.tenants SET bootstrap_started_at = now()
    WHERE id = ANY(${sql.array(ids, 'text')}) AND bootstrap_started_at IS NULL`);
}
