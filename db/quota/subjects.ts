import { z } from 'zod';
import { sql } from '../pool';
import type { Queryable } from './queryable';

export const assignmentRow = z.object({
  subject: z.string(),
  plan_id: z.string(),
  plan_name: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type AssignmentRow = z.infer<typeof assignmentRow>;

export const overrideRow = z.object({
  policy_id: z.string(),
  /** int8 as a decimal string (at most 2^53-1 by the column's check). */
  limit_amount: z.string().nullable(),
  enabled: z.boolean(),
});
export type OverrideRow = z.infer<typeof overrideRow>;

export async function findAssignment(
  db: Queryable,
  tenantId: string,
  subject: string,
): Promise<AssignmentRow | null> {
  return db.maybeOne(sql.type(assignmentRow)`
    SELECT a.subject, a.plan_id, p.name AS plan_name, a.created_at, a.updated_at
    FROM quota.assignments a JOIN quota.plans p ON p.id = a.plan_id
    WHERE a.tenant_id = ${tenantId} AND a.subject = ${subject}`);
}

/** Assigns a plan, keeping created_at when the subject had one. */
export async function upsertAssignment(
  db: Queryable,
  tenantId: string,
  subject: string,
  planId: string,
): Promise<void> {
  await db.query(sql.unsafe`
    INSERT INTO quota.assignments (tenant_id, subject, plan_id) VALUES (${tenantId}, ${subject}, ${planId})
    ON CONFLICT (tenant_id, subject) DO UPDATE SET plan_id = excluded.plan_id, updated_at = now()`);
}

export async function deleteAssignment(
  db: Queryable,
  tenantId: string,
  subject: string,
): Promise<boolean> {
  const result = await db.query(sql.unsafe`
    DELETE FROM quota.assignments WHERE tenant_id = ${tenantId} AND subject = ${subject}`);
  return result.rowCount > 0;
}

export async function listOverrides(
  db: Queryable,
  tenantId: string,
  subject: string,
): Promise<readonly OverrideRow[]> {
  return db.any(sql.type(overrideRow)`
    SELECT policy_id, limit_amount, enabled FROM quota.overrides
    WHERE tenant_id = ${tenantId} AND subject = ${subject} ORDER BY policy_id`);
}

/** The subject's overrides become exactly these. */
export async function replaceOverrides(
  db: Queryable,
  tenantId: string,
  subject: string,
  overrides: { policy_id: string; limit_amount: number | null; enabled: boolean }[],
): Promise<void> {
  await db.query(
    sql.unsafe`DELETE FROM quota.overrides WHERE tenant_id = ${tenantId} AND subject = ${subject}`,
  );
  if (overrides.length === 0) return;
  await db.query(sql.unsafe`
    INSERT INTO quota.overrides (tenant_id, subject, policy_id, limit_amount, enabled)
    SELECT ${tenantId}, ${subject}, o.policy_id, o.limit_amount, o.enabled
    FROM unnest(${sql.array(
      overrides.map((o) => o.policy_id),
      'text',
    )},
                ${sql.array(
                  overrides.map((o) => (o.limit_amount === null ? null : String(o.limit_amount))),
                  'int8',
                )},
                ${sql.array(
                  overrides.map((o) => o.enabled),
                  'bool',
                )}) AS o(policy_id, limit_amount, enabled)`);
}
