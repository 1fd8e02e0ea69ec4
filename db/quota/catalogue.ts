import type { DatabaseTransactionConnection } from 'slonik';
import { sql } from '../pool';
import type { Queryable } from './queryable';

export interface ResourceRow {
  id: string;
  name: string;
  description: string;
  unit: string;
  created_at: string;
  updated_at: string;
}

export interface PolicyRow {
  id: string;
  name: string;
  resource_id: string;
  kind: 'quota' | 'rate_limit';
  /** int8 as a decimal string (at most 2^53-1 by the column's check). */
  limit_amount: string | null;
  window_kind: 'fixed' | 'rolling' | 'lifetime' | null;
  window_unit: 'minute' | 'hour' | 'day' | 'week' | 'month' | null;
  window_size: number | null;
  tz: string | null;
  bucket_capacity: string | null;
  refill_rate_per_sec: number | null;
  enforcement_mode: 'strict' | 'fast';
  on_exceed: 'block' | 'allow_overage';
  on_backend_error: 'deny' | 'allow' | null;
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

export interface PlanRow {
  id: string;
  name: string;
  description: string;
  policy_ids: string[];
  created_at: string;
  updated_at: string;
}

export type CatalogueTable = 'resources' | 'policies' | 'plans';

const RESOURCE = sql.fragment`id, name, description, unit, created_at, updated_at`;
const POLICY = sql.fragment`id, name, resource_id, kind, limit_amount, window_kind, window_unit,
  window_size, tz, bucket_capacity, refill_rate_per_sec, enforcement_mode, on_exceed,
  on_backend_error, enabled, created_at, updated_at`;
const PLAN = sql.fragment`p.id, p.name, p.description, p.created_at, p.updated_at,
  coalesce((SELECT array_agg(pp.policy_id ORDER BY pp.position) FROM quota.plan_policies pp
            WHERE pp.plan_id = p.id), '{}') AS policy_ids`;

/** Column values for an INSERT or UPDATE from a plain object (keys are column names). */
function assignments(values: Record<string, unknown>) {
  return Object.entries(values)
    .filter(([, value]) => value !== undefined)
    .map(([column, value]) => ({ column: sql.identifier([column]), value: value as never }));
}

async function insertRow<T>(
  db: Queryable,
  table: CatalogueTable,
  columns: ReturnType<typeof sql.fragment>,
  values: Record<string, unknown>,
): Promise<T> {
  const set = assignments(values);
  return (await db.one(sql.unsafe`
    INSERT INTO ${sql.identifier(['quota', table])}
      (${sql.join(
        set.map((s) => s.column),
        sql.fragment`, `,
      )})
    VALUES (${sql.join(
      set.map((s) => sql.fragment`${s.value}`),
      sql.fragment`, `,
    )})
    RETURNING ${columns}`)) as T;
}

async function updateRow<T>(
  db: Queryable,
  table: CatalogueTable,
  columns: ReturnType<typeof sql.fragment>,
  id: string,
  values: Record<string, unknown>,
): Promise<T> {
  const set = assignments(values).map((s) => sql.fragment`${s.column} = ${s.value}`);
  set.push(sql.fragment`updated_at = now()`);
  return (await db.one(sql.unsafe`
    UPDATE ${sql.identifier(['quota', table])} SET ${sql.join(set, sql.fragment`, `)}
    WHERE id = ${id} RETURNING ${columns}`)) as T;
}

async function findRow<T>(
  db: Queryable,
  table: CatalogueTable,
  columns: ReturnType<typeof sql.fragment>,
  tenantId: string,
  id: string,
  lock: boolean,
): Promise<T | null> {
  return (await db.maybeOne(sql.unsafe`
    SELECT ${columns} FROM ${sql.identifier(['quota', table])}
    WHERE tenant_id = ${tenantId} AND id = ${id} ${lock ? sql.fragment`FOR UPDATE` : sql.fragment``}`)) as T | null;
}

export const resources = {
  insert: (db: Queryable, values: Record<string, unknown>) =>
    insertRow<ResourceRow>(db, 'resources', RESOURCE, values),
  update: (db: Queryable, id: string, values: Record<string, unknown>) =>
    updateRow<ResourceRow>(db, 'resources', RESOURCE, id, values),
  find: (db: Queryable, tenantId: string, id: string, lock = false) =>
    findRow<ResourceRow>(db, 'resources', RESOURCE, tenantId, id, lock),
  list: async (db: Queryable, tenantId: string) =>
    (await db.any(sql.unsafe`
      SELECT ${RESOURCE} FROM quota.resources WHERE tenant_id = ${tenantId}
      ORDER BY created_at, id`)) as ResourceRow[],
  inUse: async (db: Queryable, id: string) =>
    (await db.oneFirst(sql.unsafe`
      SELECT EXISTS (SELECT 1 FROM quota.policies WHERE resource_id = ${id})
          OR EXISTS (SELECT 1 FROM quota.alert_rules WHERE resource_id = ${id})`)) as boolean,
};

export const policies = {
  insert: (db: Queryable, values: Record<string, unknown>) =>
    insertRow<PolicyRow>(db, 'policies', POLICY, values),
  update: (db: Queryable, id: string, values: Record<string, unknown>) =>
    updateRow<PolicyRow>(db, 'policies', POLICY, id, values),
  find: (db: Queryable, tenantId: string, id: string, lock = false) =>
    findRow<PolicyRow>(db, 'policies', POLICY, tenantId, id, lock),
  list: async (db: Queryable, tenantId: string) =>
    (await db.any(sql.unsafe`
      SELECT ${POLICY} FROM quota.policies WHERE tenant_id = ${tenantId}
      ORDER BY created_at, id`)) as PolicyRow[],
  /** Which of these ids are policies of the tenant. */
  existing: async (db: Queryable, tenantId: string, ids: string[]) =>
    (await db.anyFirst(sql.unsafe`
      SELECT id FROM quota.policies
      WHERE tenant_id = ${tenantId} AND id = ANY(${sql.array(ids, 'text')})`)) as string[],
  inUse: async (db: Queryable, id: string) =>
    (await db.oneFirst(sql.unsafe`
      SELECT EXISTS (SELECT 1 FROM quota.plan_policies WHERE policy_id = ${id})
          OR EXISTS (SELECT 1 FROM quota.alert_rules WHERE policy_id = ${id})`)) as boolean,
  /** A policy goes with the overrides that named it. */
  delete: async (db: Queryable, id: string) => {
    await db.query(sql.unsafe`DELETE FROM quota.overrides WHERE policy_id = ${id}`);
    await db.query(sql.unsafe`DELETE FROM quota.policies WHERE id = ${id}`);
  },
};

export const plans = {
  insert: async (db: Queryable, values: Record<string, unknown>): Promise<PlanRow> => {
    const row = await insertRow<{ id: string }>(db, 'plans', sql.fragment`id`, values);
    return (await plans.find(db, values.tenant_id as string, row.id))!;
  },
  update: async (db: Queryable, tenantId: string, id: string, values: Record<string, unknown>) => {
    await updateRow<{ id: string }>(db, 'plans', sql.fragment`id`, id, values);
    return (await plans.find(db, tenantId, id))!;
  },
  find: async (db: Queryable, tenantId: string, id: string, lock = false) =>
    (await db.maybeOne(sql.unsafe`
      SELECT ${PLAN} FROM quota.plans p WHERE p.tenant_id = ${tenantId} AND p.id = ${id}
      ${lock ? sql.fragment`FOR UPDATE OF p` : sql.fragment``}`)) as PlanRow | null,
  list: async (db: Queryable, tenantId: string) =>
    (await db.any(sql.unsafe`
      SELECT ${PLAN} FROM quota.plans p WHERE p.tenant_id = ${tenantId}
      ORDER BY p.created_at, p.id`)) as PlanRow[],
  /** Replaces a plan's policies, in the order given. */
  setPolicies: async (db: Queryable, planId: string, policyIds: string[]) => {
    await db.query(sql.unsafe`DELETE FROM quota.plan_policies WHERE plan_id = ${planId}`);
    await db.query(sql.unsafe`
      INSERT INTO quota.plan_policies (plan_id, policy_id, position)
      SELECT ${planId}, policy_id, position::int
      FROM unnest(${sql.array(policyIds, 'text')}) WITH ORDINALITY AS p(policy_id, position)`);
  },
  inUse: async (db: Queryable, id: string) =>
    (await db.oneFirst(sql.unsafe`
      SELECT EXISTS (SELECT 1 FROM quota.assignments WHERE plan_id = ${id})`)) as boolean,
};

/** Deletes a catalogue row (its dependants are the caller's to check or remove first). */
export async function deleteRow(db: Queryable, table: CatalogueTable, id: string): Promise<void> {
  await db.query(sql.unsafe`DELETE FROM ${sql.identifier(['quota', table])} WHERE id = ${id}`);
}

/**
 * Makes the caller's transaction one read-only snapshot (REPEATABLE READ): a catalogue read sees
 * a generation and the rows it counts as of one instant. Its first statement.
 */
export async function readAsOneSnapshot(
  tx: Pick<DatabaseTransactionConnection, 'query'>,
): Promise<void> {
  await tx.query(sql.unsafe`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`);
}
