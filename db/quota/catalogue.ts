import type { DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { existsRow, sql } from '../pool';
import type { Queryable } from './queryable';

export const resourceRow = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  unit: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ResourceRow = z.infer<typeof resourceRow>;

const RESOURCE = sql.fragment`id, name, description, unit, created_at, updated_at`;

export const policyRow = z.object({
  id: z.string(),
  name: z.string(),
  resource_id: z.string(),
  kind: z.enum(['quota', 'rate_limit']),
  /** int8 as a decimal string (at most 2^53-1 by the column's check). */
  limit_amount: z.string().nullable(),
  window_kind: z.enum(['fixed', 'rolling', 'lifetime']).nullable(),
  window_unit: z.enum(['minute', 'hour', 'day', 'week', 'month']).nullable(),
  window_size: z.number().nullable(),
  tz: z.string().nullable(),
  bucket_capacity: z.string().nullable(),
  refill_rate_per_sec: z.number().nullable(),
  enforcement_mode: z.enum(['strict', 'fast']),
  on_exceed: z.enum(['block', 'allow_overage']),
  on_backend_error: z.enum(['deny', 'allow']).nullable(),
  enabled: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type PolicyRow = z.infer<typeof policyRow>;

const POLICY = sql.fragment`id, name, resource_id, kind, limit_amount, window_kind, window_unit,
  window_size, tz, bucket_capacity, refill_rate_per_sec, enforcement_mode, on_exceed,
  on_backend_error, enabled, created_at, updated_at`;

export const planRow = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  policy_ids: z.array(z.string()),
});
export type PlanRow = z.infer<typeof planRow>;

const PLAN = sql.fragment`p.id, p.name, p.description, p.created_at, p.updated_at,
  coalesce((SELECT array_agg(pp.policy_id ORDER BY pp.position) FROM quota.plan_policies pp
            WHERE pp.plan_id = p.id), '{}') AS policy_ids`;

/** The row of a statement that returns the id alone (a plan's insert and update). */
const idRow = z.object({ id: z.string() });

export type CatalogueTable = 'resources' | 'policies' | 'plans';

/** Column values for an INSERT or UPDATE from a plain object (keys are column names). */
function assignments(values: Record<string, unknown>) {
  return Object.entries(values)
    .filter(([, value]) => value !== undefined)
    .map(([column, value]) => ({ column: sql.identifier([column]), value: value as never }));
}

async function insertRow<T extends z.ZodTypeAny>(
  db: Queryable,
  table: CatalogueTable,
  row: T,
  columns: ReturnType<typeof sql.fragment>,
  values: Record<string, unknown>,
): Promise<z.infer<T>> {
  const set = assignments(values);
  return db.one(sql.type(row)`
    INSERT INTO ${sql.identifier(['quota', table])}
      (${sql.join(
        set.map((s) => s.column),
        sql.fragment`, `,
      )})
    VALUES (${sql.join(
      set.map((s) => sql.fragment`${s.value}`),
      sql.fragment`, `,
    )})
    RETURNING ${columns}`);
}

async function updateRow<T extends z.ZodTypeAny>(
  db: Queryable,
  table: CatalogueTable,
  row: T,
  columns: ReturnType<typeof sql.fragment>,
  id: string,
  values: Record<string, unknown>,
): Promise<z.infer<T>> {
  const set = assignments(values).map((s) => sql.fragment`${s.column} = ${s.value}`);
  set.push(sql.fragment`updated_at = now()`);
  return db.one(sql.type(row)`
    UPDATE ${sql.identifier(['quota', table])} SET ${sql.join(set, sql.fragment`, `)}
    WHERE id = ${id} RETURNING ${columns}`);
}

async function findRow<T extends z.ZodTypeAny>(
  db: Queryable,
  table: CatalogueTable,
  row: T,
  columns: ReturnType<typeof sql.fragment>,
  tenantId: string,
  id: string,
  lock: boolean,
): Promise<z.infer<T> | null> {
  return db.maybeOne(sql.type(row)`
    SELECT ${columns} FROM ${sql.identifier(['quota', table])}
    WHERE tenant_id = ${tenantId} AND id = ${id} ${lock ? sql.fragment`FOR UPDATE` : sql.fragment``}`);
}

/** The row of `SELECT EXISTS (…) OR EXISTS (…)`: its one column, unnamed. */
const eitherExistsRow = z.object({ '?column?': z.boolean() });
/** The row of `SELECT EXISTS (…)`: its one column, `exists`. */

export const resources = {
  insert: (db: Queryable, values: Record<string, unknown>) =>
    insertRow(db, 'resources', resourceRow, RESOURCE, values),
  update: (db: Queryable, id: string, values: Record<string, unknown>) =>
    updateRow(db, 'resources', resourceRow, RESOURCE, id, values),
  find: (db: Queryable, tenantId: string, id: string, lock = false) =>
    findRow(db, 'resources', resourceRow, RESOURCE, tenantId, id, lock),
  list: async (db: Queryable, tenantId: string) =>
    db.any(sql.type(resourceRow)`
      SELECT ${RESOURCE} FROM quota.resources WHERE tenant_id = ${tenantId}
      ORDER BY created_at, id`),
  inUse: async (db: Queryable, id: string) =>
    db.oneFirst(sql.type(eitherExistsRow)`
      SELECT EXISTS (SELECT 1 FROM quota.policies WHERE resource_id = ${id})
          OR EXISTS (SELECT 1 FROM quota.alert_rules WHERE resource_id = ${id})`),
};

export const policies = {
  insert: (db: Queryable, values: Record<string, unknown>) =>
    insertRow(db, 'policies', policyRow, POLICY, values),
  update: (db: Queryable, id: string, values: Record<string, unknown>) =>
    updateRow(db, 'policies', policyRow, POLICY, id, values),
  find: (db: Queryable, tenantId: string, id: string, lock = false) =>
    findRow(db, 'policies', policyRow, POLICY, tenantId, id, lock),
  list: async (db: Queryable, tenantId: string) =>
    db.any(sql.type(policyRow)`
      SELECT ${POLICY} FROM quota.policies WHERE tenant_id = ${tenantId}
      ORDER BY created_at, id`),
  /** Which of these ids are policies of the tenant. */
  existing: async (db: Queryable, tenantId: string, ids: string[]) =>
    db.anyFirst(sql.type(idRow)`
      SELECT id FROM quota.policies
      WHERE tenant_id = ${tenantId} AND id = ANY(${sql.array(ids, 'text')})`),
  inUse: async (db: Queryable, id: string) =>
    db.oneFirst(sql.type(eitherExistsRow)`
      SELECT EXISTS (SELECT 1 FROM quota.plan_policies WHERE policy_id = ${id})
          OR EXISTS (SELECT 1 FROM quota.alert_rules WHERE policy_id = ${id})`),
  /** A policy goes with the overrides that named it. */
  delete: async (db: Queryable, id: string) => {
    await db.query(sql.unsafe`DELETE FROM quota.overrides WHERE policy_id = ${id}`);
    await db.query(sql.unsafe`DELETE FROM quota.policies WHERE id = ${id}`);
  },
};

export const plans = {
  insert: async (db: Queryable, values: Record<string, unknown>): Promise<PlanRow> => {
    const row = await insertRow(db, 'plans', idRow, sql.fragment`id`, values);
    return (await plans.find(db, values.tenant_id as string, row.id))!;
  },
  update: async (db: Queryable, tenantId: string, id: string, values: Record<string, unknown>) => {
    await updateRow(db, 'plans', idRow, sql.fragment`id`, id, values);
    return (await plans.find(db, tenantId, id))!;
  },
  find: async (db: Queryable, tenantId: string, id: string, lock = false) =>
    db.maybeOne(sql.type(planRow)`
      SELECT ${PLAN} FROM quota.plans p WHERE p.tenant_id = ${tenantId} AND p.id = ${id}
      ${lock ? sql.fragment`FOR UPDATE OF p` : sql.fragment``}`),
  list: async (db: Queryable, tenantId: string) =>
    db.any(sql.type(planRow)`
      SELECT ${PLAN} FROM quota.plans p WHERE p.tenant_id = ${tenantId}
      ORDER BY p.created_at, p.id`),
  /** Replaces a plan's policies, in the order given. */
  setPolicies: async (db: Queryable, planId: string, policyIds: string[]) => {
    await db.query(sql.unsafe`DELETE FROM quota.plan_policies WHERE plan_id = ${planId}`);
    await db.query(sql.unsafe`
      INSERT INTO quota.plan_policies (plan_id, policy_id, position)
      SELECT ${planId}, policy_id, position::int
      FROM unnest(${sql.array(policyIds, 'text')}) WITH ORDINALITY AS p(policy_id, position)`);
  },
  inUse: async (db: Queryable, id: string) =>
    db.oneFirst(sql.type(existsRow)`
      SELECT EXISTS (SELECT 1 FROM quota.assignments WHERE plan_id = ${id})`),
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
