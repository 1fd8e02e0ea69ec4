import type { Redis } from '../../db/redis';
import { announceChange } from './catalogue-cache';
import type { DatabasePool } from '../../db/pool';
import { insertAudit } from '../../db/quota/audit';
import { plans, policies } from '../../db/quota/catalogue';
import type { Queryable } from '../../db/quota/queryable';
import {
  deleteAssignment,
  findAssignment,
  listOverrides,
  replaceOverrides,
  upsertAssignment,
  type AssignmentRow,
  type OverrideRow,
} from '../../db/quota/subjects';
import { exactIntegerOrNull } from '../../platform/exact-json';
import { checkPlan, checkSubject } from './constraints';
import { actedBy, type Principal } from './credentials';
import { quotaError, referenceNotFound } from './errors';
import { tenantOf } from './keys';

/**
 * A subject's plan and its per-policy overrides. The subject is the caller's free-form string,
 * bounded by the key's subject_prefix; an assigned plan by its plan_ids.
 */
type Deps = { pool: DatabasePool; redis: Redis };

export type AssignmentOut = Omit<AssignmentRow, 'updated_at'>;
const assignmentOut = ({ updated_at: _updated, ...row }: AssignmentRow): AssignmentOut => row;

export interface OverrideOut {
  policy_id: string;
  limit_amount_override: number | bigint | null;
  enabled: boolean;
}
const overrideOut = (row: OverrideRow): OverrideOut => ({
  policy_id: row.policy_id,
  limit_amount_override: exactIntegerOrNull(row.limit_amount),
  enabled: row.enabled,
});

/** The tenant the principal acts for, once the subject is within its subject_prefix. */
function subjectTenant(principal: Principal, subject: string): string {
  const tenantId = tenantOf(principal);
  checkSubject(principal, subject);
  return tenantId;
}

async function audit(
  tx: Queryable,
  principal: Principal,
  tenantId: string,
  action: string,
  subject: string,
  before: unknown,
  after: unknown,
) {
  await insertAudit(tx, {
    ...actedBy(principal, tenantId),
    action,
    entityType: 'subject',
    entityId: subject,
    before,
    after,
  });
}

export async function getAssignment(
  deps: Deps,
  principal: Principal,
  subject: string,
): Promise<AssignmentOut> {
  const row = await findAssignment(deps.pool, subjectTenant(principal, subject), subject);
  if (!row) throw quotaError('assignment_not_found');
  return assignmentOut(row);
}

export async function assignPlan(
  deps: Deps,
  principal: Principal,
  subject: string,
  planId: string,
): Promise<AssignmentOut> {
  const tenantId = subjectTenant(principal, subject);
  checkPlan(principal, planId);
  const after = await deps.pool.transaction(async (tx) => {
    if (!(await plans.find(tx, tenantId, planId))) throw referenceNotFound(['plan_id'], 'plan');
    const before = await findAssignment(tx, tenantId, subject);
    await upsertAssignment(tx, tenantId, subject, planId);
    const after = assignmentOut((await findAssignment(tx, tenantId, subject))!);
    await audit(
      tx,
      principal,
      tenantId,
      'assignment.put',
      subject,
      before && assignmentOut(before),
      after,
    );
    return after;
  });
  await announceChange(deps, tenantId, subject);
  return after;
}

export async function unassign(deps: Deps, principal: Principal, subject: string): Promise<void> {
  const tenantId = subjectTenant(principal, subject);
  await deps.pool.transaction(async (tx) => {
    const before = await findAssignment(tx, tenantId, subject);
    if (!before) throw quotaError('assignment_not_found');
    await deleteAssignment(tx, tenantId, subject);
    await audit(tx, principal, tenantId, 'assignment.delete', subject, assignmentOut(before), null);
  });
  await announceChange(deps, tenantId, subject);
}

export async function getOverrides(
  deps: Deps,
  principal: Principal,
  subject: string,
): Promise<OverrideOut[]> {
  return (await listOverrides(deps.pool, subjectTenant(principal, subject), subject)).map(
    overrideOut,
  );
}

export interface OverrideItem {
  policy_id: string;
  limit_amount: number | null;
  enabled: boolean;
}

/** PUT: the subject's overrides become exactly these (each policy once). */
export async function putOverrides(
  deps: Deps,
  principal: Principal,
  subject: string,
  items: OverrideItem[],
): Promise<OverrideOut[]> {
  const tenantId = subjectTenant(principal, subject);
  const after = await deps.pool.transaction(async (tx) => {
    const known = new Set(
      await policies.existing(
        tx,
        tenantId,
        items.map((i) => i.policy_id),
      ),
    );
    const missing = items.findIndex((item) => !known.has(item.policy_id));
    if (missing >= 0) throw referenceNotFound(['overrides', missing, 'policy_id'], 'policy');
    const before = (await listOverrides(tx, tenantId, subject)).map(overrideOut);
    await replaceOverrides(tx, tenantId, subject, items);
    const after = (await listOverrides(tx, tenantId, subject)).map(overrideOut);
    await audit(
      tx,
      principal,
      tenantId,
      'overrides.put',
      subject,
      { overrides: before },
      { overrides: after },
    );
    return after;
  });
  await announceChange(deps, tenantId, subject);
  return after;
}
