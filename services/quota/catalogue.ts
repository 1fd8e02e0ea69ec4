import { ulid } from '../../db/ids';
import { sqlState, type DatabasePool } from '../../db/pool';
import type { Redis } from '../../db/redis';
import { announceChange } from './catalogue-cache';
import { insertAudit } from '../../db/quota/audit';
import {
  deleteRow,
  plans,
  policies,
  resources,
  type CatalogueTable,
  type PlanRow,
  type PolicyRow,
  type ResourceRow,
} from '../../db/quota/catalogue';
import type { Queryable } from '../../db/quota/queryable';
import { exactIntegerOrNull } from '../../platform/exact-json';
import { checkCatalogName } from './constraints';
import { actedBy, type Principal } from './credentials';
import { bodyRefusal, quotaError, referenceNotFound, type QuotaErrorCode } from './errors';
import { tenantOf } from './keys';

/**
 * The catalogue: resources (what is counted), policies (a quota or a rate limit on a resource)
 * and plans (sets of policies). Every change is audited in its transaction; names are unique in
 * the tenant (409 name_taken) and bounded by the key's catalog_name_prefix; what is still
 * referenced is not deleted (409 in_use).
 */
type Deps = { pool: DatabasePool; redis: Redis };

interface Kind<Row, Out> {
  table: CatalogueTable;
  entity: 'resource' | 'policy' | 'plan';
  notFound: QuotaErrorCode;
  find(db: Queryable, tenantId: string, id: string, lock?: boolean): Promise<Row | null>;
  out(row: Row): Out;
  inUse(db: Queryable, id: string): Promise<boolean>;
}

const RESOURCE: Kind<ResourceRow, ResourceRow> = {
  table: 'resources',
  entity: 'resource',
  notFound: 'resource_not_found',
  find: resources.find,
  out: (row) => row,
  inUse: resources.inUse,
};

export const policyOut = (row: PolicyRow) => ({
  ...row,
  limit_amount: exactIntegerOrNull(row.limit_amount),
  bucket_capacity: exactIntegerOrNull(row.bucket_capacity),
});
export type PolicyOut = ReturnType<typeof policyOut>;

const POLICY: Kind<PolicyRow, PolicyOut> = {
  table: 'policies',
  entity: 'policy',
  notFound: 'policy_not_found',
  find: policies.find,
  out: policyOut,
  inUse: policies.inUse,
};

const PLAN: Kind<PlanRow, PlanRow> = {
  table: 'plans',
  entity: 'plan',
  notFound: 'plan_not_found',
  find: plans.find,
  out: (row) => row,
  inUse: plans.inUse,
};

/** A unique name taken by another row of the tenant is the client's conflict, not a 500. */
async function uniqueName<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (sqlState(error) === '23505') throw quotaError('name_taken');
    throw error;
  }
}

export async function audited<T>(
  deps: Deps,
  principal: Principal,
  entity: string,
  action: string,
  change: (tx: Queryable, tenantId: string) => Promise<{ id: string; before: unknown; after: T }>,
): Promise<T> {
  const tenantId = tenantOf(principal);
  const after = await deps.pool.transaction(async (tx) => {
    const { id, before, after } = await uniqueName(() => change(tx, tenantId));
    await insertAudit(tx, {
      ...actedBy(principal, tenantId),
      action: `${entity}.${action}`,
      entityType: entity,
      entityId: id,
      before,
      after,
    });
    return after;
  });
  await announceChange(deps, tenantId);
  return after;
}

/** A row to change: the tenant's, and inside the key's catalog_name_prefix. */
async function writable<Row extends { name: string }>(
  tx: Queryable,
  kind: Kind<Row, unknown>,
  principal: Principal,
  tenantId: string,
  id: string,
): Promise<Row> {
  const row = await kind.find(tx, tenantId, id, true);
  if (!row) throw quotaError(kind.notFound);
  checkCatalogName(principal, row.name);
  return row;
}

async function getOne<Row, Out>(
  deps: Deps,
  kind: Kind<Row, Out>,
  principal: Principal,
  id: string,
) {
  const row = await kind.find(deps.pool, tenantOf(principal), id);
  if (!row) throw quotaError(kind.notFound);
  return kind.out(row);
}

async function deleteOne<Row extends { name: string }>(
  deps: Deps,
  kind: Kind<Row, unknown>,
  principal: Principal,
  id: string,
): Promise<void> {
  await audited(deps, principal, kind.entity, 'delete', async (tx, tenantId) => {
    const row = await writable(tx, kind, principal, tenantId, id);
    if (await kind.inUse(tx, id)) throw quotaError('in_use');
    if (kind.table === 'policies') await policies.delete(tx, id);
    else await deleteRow(tx, kind.table, id);
    return { id, before: kind.out(row), after: null };
  });
}

// Resources

export interface ResourceInput {
  name: string;
  description?: string;
  unit?: string;
}

export const listResources = (deps: Deps, principal: Principal) =>
  resources.list(deps.pool, tenantOf(principal));
export const getResource = (deps: Deps, principal: Principal, id: string) =>
  getOne(deps, RESOURCE, principal, id);
export const deleteResource = (deps: Deps, principal: Principal, id: string) =>
  deleteOne(deps, RESOURCE, principal, id);

export function createResource(deps: Deps, principal: Principal, input: ResourceInput) {
  checkCatalogName(principal, input.name);
  return audited(deps, principal, 'resource', 'create', async (tx, tenantId) => {
    const row = await resources.insert(tx, { id: `res_${ulid()}`, tenant_id: tenantId, ...input });
    return { id: row.id, before: null, after: row };
  });
}

export function patchResource(
  deps: Deps,
  principal: Principal,
  id: string,
  patch: Partial<ResourceInput>,
) {
  if (patch.name !== undefined) checkCatalogName(principal, patch.name);
  return audited(deps, principal, 'resource', 'update', async (tx, tenantId) => {
    const before = await writable(tx, RESOURCE, principal, tenantId, id);
    return { id, before, after: await resources.update(tx, id, patch) };
  });
}

// Policies

export type PolicyInput = Omit<PolicyOut, 'id' | 'created_at' | 'updated_at'>;
export type PolicyPatch = Partial<
  Pick<
    PolicyOut,
    | 'name'
    | 'limit_amount'
    | 'bucket_capacity'
    | 'refill_rate_per_sec'
    | 'on_exceed'
    | 'on_backend_error'
    | 'enabled'
  >
>;

export const listPolicies = async (deps: Deps, principal: Principal) =>
  (await policies.list(deps.pool, tenantOf(principal))).map(policyOut);
export const getPolicy = (deps: Deps, principal: Principal, id: string) =>
  getOne(deps, POLICY, principal, id);
export const deletePolicy = (deps: Deps, principal: Principal, id: string) =>
  deleteOne(deps, POLICY, principal, id);

export function createPolicy(deps: Deps, principal: Principal, input: PolicyInput) {
  checkCatalogName(principal, input.name);
  return audited(deps, principal, 'policy', 'create', async (tx, tenantId) => {
    if (!(await resources.find(tx, tenantId, input.resource_id)))
      throw referenceNotFound(['resource_id'], 'resource');
    const row = await policies.insert(tx, { id: `pol_${ulid()}`, tenant_id: tenantId, ...input });
    return { id: row.id, before: null, after: policyOut(row) };
  });
}

/**
 * A patch of a policy: a field of the other kind is refused (422 at that field); `null` leaves a
 * field as it is, but on_backend_error, where it means the enforcement mode's default.
 */
export function patchPolicy(deps: Deps, principal: Principal, id: string, patch: PolicyPatch) {
  if (patch.name) checkCatalogName(principal, patch.name);
  return audited(deps, principal, 'policy', 'update', async (tx, tenantId) => {
    const before = await writable(tx, POLICY, principal, tenantId, id);
    const otherKind =
      before.kind === 'quota'
        ? (['bucket_capacity', 'refill_rate_per_sec'] as const)
        : (['limit_amount'] as const);
    const misplaced = otherKind.filter(
      (field) => patch[field] !== undefined && patch[field] !== null,
    );
    if (misplaced.length > 0)
      throw bodyRefusal(
        misplaced.map((field) => ({
          path: [field],
          message: `${field} does not apply to a ${before.kind} policy`,
          type: 'kind_mismatch',
        })),
      );
    const { on_backend_error, ...rest } = patch;
    const changes: Record<string, unknown> = Object.fromEntries(
      Object.entries(rest).filter(([, value]) => value !== null),
    );
    if (on_backend_error !== undefined) changes.on_backend_error = on_backend_error;
    return {
      id,
      before: policyOut(before),
      after: policyOut(await policies.update(tx, id, changes)),
    };
  });
}

// Plans

export interface PlanInput {
  name: string;
  description?: string;
  policy_ids?: string[];
}

export const listPlans = (deps: Deps, principal: Principal) =>
  plans.list(deps.pool, tenantOf(principal));
export const getPlan = (deps: Deps, principal: Principal, id: string) =>
  getOne(deps, PLAN, principal, id);
export const deletePlan = (deps: Deps, principal: Principal, id: string) =>
  deleteOne(deps, PLAN, principal, id);

/** Every id must be a policy of the tenant (422 at the first that is not). */
async function checkPolicyIds(tx: Queryable, tenantId: string, ids: string[], field: string) {
  const found = new Set(await policies.existing(tx, tenantId, ids));
  const missing = ids.findIndex((policyId) => !found.has(policyId));
  if (missing >= 0) throw referenceNotFound([field, missing], 'policy');
}

export function createPlan(deps: Deps, principal: Principal, input: PlanInput) {
  checkCatalogName(principal, input.name);
  return audited(deps, principal, 'plan', 'create', async (tx, tenantId) => {
    const { policy_ids: policyIds = [], ...fields } = input;
    await checkPolicyIds(tx, tenantId, policyIds, 'policy_ids');
    const created = await plans.insert(tx, {
      id: `plan_${ulid()}`,
      tenant_id: tenantId,
      ...fields,
    });
    await plans.setPolicies(tx, created.id, policyIds);
    const after = (await plans.find(tx, tenantId, created.id))!;
    return { id: created.id, before: null, after };
  });
}

/** PlanPatch: a null leaves the field as it is. */
export function patchPlan(
  deps: Deps,
  principal: Principal,
  id: string,
  patch: { name?: string | null; description?: string | null },
) {
  if (patch.name) checkCatalogName(principal, patch.name);
  return audited(deps, principal, 'plan', 'update', async (tx, tenantId) => {
    const before = await writable(tx, PLAN, principal, tenantId, id);
    const changes = Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== null));
    return { id, before, after: await plans.update(tx, tenantId, id, changes) };
  });
}

/** PUT: the plan's policies become exactly these, in this order. */
export function putPlanPolicies(deps: Deps, principal: Principal, id: string, policyIds: string[]) {
  return audited(deps, principal, 'plan', 'set_policies', async (tx, tenantId) => {
    const before = await writable(tx, PLAN, principal, tenantId, id);
    await checkPolicyIds(tx, tenantId, policyIds, 'policy_ids');
    await plans.setPolicies(tx, id, policyIds);
    return { id, before, after: (await plans.find(tx, tenantId, id))! };
  });
}
