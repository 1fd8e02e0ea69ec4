import { WorkflowIdReusePolicy } from '@temporalio/client';
import { ulid } from '../../db/ids';
import { insertAudit } from '../../db/quota/audit';
import {
  dueBootstraps,
  findTenant,
  insertTenant,
  listTenants,
  markBootstrapsStarted,
  requestBootstrap,
  updateTenant,
  type TenantRow,
  type TenantStatus,
} from '../../db/quota/tenants';
import { executionSearchAttributes } from '../../contracts/shared/search-attributes';
import { bootstrapSummary } from '../../contracts/quota/summaries';
import { bootstrapWorkflowId } from '../../contracts/quota/bootstrap';
import { createOutboxDispatcher, type OutboxSource } from '../../platform/outbox';
import type { PlatformDeps } from '../../platform/deps';
import { taskQueues } from '../../contracts/shared/task-queues';
import { announceChange } from './catalogue-cache';
import { actedBy, type Principal } from './credentials';
import { quotaError } from './errors';
import { apiKeyOut, insertNewKey, type ApiKeyMinted } from './keys';
import { TENANT_SCOPE_NAMES } from './scopes';

/** The tenant record (the spec leaves its fields to us). */
export interface TenantOut {
  id: string;
  name: string;
  status: TenantStatus;
  /** The initial grants (quota-bootstrap/<id>): pending, running, done or failed with its error. */
  bootstrap: { state: string; attempts: number; error: string | null };
  created_at: string;
  updated_at: string;
  suspended_at: string | null;
}

/** TenantCreated: the record and its first key, holding every tenant scope (shown once). */
export type TenantCreated = TenantOut & { admin_key: ApiKeyMinted };

export const tenantOut = (row: TenantRow): TenantOut => ({
  id: row.id,
  name: row.name,
  status: row.status,
  bootstrap: {
    state: row.bootstrap_state,
    attempts: row.bootstrap_attempts,
    error: row.bootstrap_error,
  },
  created_at: row.created_at,
  updated_at: row.updated_at,
  suspended_at: row.suspended_at,
});

type TenantDeps = Pick<PlatformDeps, 'pool' | 'redis' | 'config'> & {
  bootstraps: BootstrapStarter;
};

const quotaQueue = (deps: Pick<PlatformDeps, 'config'>) =>
  taskQueues(deps.config.taskQueuePrefix).quota;

const auditOf = (principal: Principal, tenantId: string) => ({
  ...actedBy(principal, tenantId),
  entityType: 'tenant',
  entityId: tenantId,
});

/** A tenant and its first key; its grants are written by its bootstrap workflow. */
export async function createTenant(
  deps: TenantDeps,
  principal: Principal,
  input: { name: string; admin_actor?: string },
): Promise<TenantCreated> {
  const created = await deps.pool.transaction(async (tx) => {
    const tenant = await insertTenant(tx, {
      id: `ten_${ulid()}`,
      name: input.name,
      bootstrapQueue: quotaQueue(deps),
    });
    const adminKey = await insertNewKey(tx, {
      tenantId: tenant.id,
      name: 'admin',
      scopes: TENANT_SCOPE_NAMES,
      actor: input.admin_actor ?? principal.actor,
      constraints: null,
      issuerActor: principal.actor,
      grant: false,
    });
    const out = tenantOut(tenant);
    await insertAudit(tx, {
      ...auditOf(principal, tenant.id),
      action: 'tenant.create',
      before: null,
      after: out,
    });
    return { ...out, admin_key: apiKeyOut(adminKey) };
  });
  deps.bootstraps.enqueue(created.id);
  return created;
}

export async function getTenant(deps: Pick<TenantDeps, 'pool'>, id: string): Promise<TenantOut> {
  const row = await findTenant(deps.pool, id);
  if (!row) throw quotaError('tenant_not_found');
  return tenantOut(row);
}

export async function listAllTenants(deps: Pick<TenantDeps, 'pool'>): Promise<TenantOut[]> {
  return (await listTenants(deps.pool)).map(tenantOut);
}

/**
 * A change of name or status (PATCH; DELETE is `status: suspended`). A suspended tenant's keys
 * are refused from their next request on every process; its data stays.
 */
export async function changeTenant(
  deps: Pick<TenantDeps, 'pool' | 'redis'>,
  principal: Principal,
  id: string,
  change: { name?: string; status?: TenantStatus },
): Promise<TenantOut> {
  const after = await deps.pool.transaction(async (tx) => {
    const before = await findTenant(tx, id, { lock: true });
    if (!before) throw quotaError('tenant_not_found');
    const updated = tenantOut(await updateTenant(tx, id, change));
    const action = change.status === 'suspended' ? 'tenant.suspend' : 'tenant.update';
    await insertAudit(tx, {
      ...auditOf(principal, id),
      action,
      before: tenantOut(before),
      after: updated,
    });
    return updated;
  });
  await announceChange(deps, id);
  return after;
}

/** Runs the bootstrap again (resumable and idempotent): its state goes back to pending. */
export async function rerunBootstrap(
  deps: TenantDeps,
  principal: Principal,
  id: string,
): Promise<TenantOut> {
  const after = await deps.pool.transaction(async (tx) => {
    const before = await findTenant(tx, id, { lock: true });
    if (!before) throw quotaError('tenant_not_found');
    const updated = tenantOut(await requestBootstrap(tx, id, quotaQueue(deps)));
    await insertAudit(tx, {
      ...auditOf(principal, id),
      action: 'tenant.bootstrap',
      before: tenantOut(before),
      after: updated,
    });
    return updated;
  });
  deps.bootstraps.enqueue(id);
  return after;
}

/**
 * Bootstrap starts as an outbox (platform/outbox.ts): a tenant asking for its grants is
 * committed first, then its workflow quota-bootstrap/<id> is started; a re-run reuses the id once
 * the last run closed.
 */
function bootstrapStarts(deps: Pick<PlatformDeps, 'pool' | 'config'>): OutboxSource<string> {
  return {
    name: 'quota bootstraps',
    keyOf: (tenantId) => tenantId,
    due: (limit, skip) => dueBootstraps(deps.pool, quotaQueue(deps), limit, skip),
    workflowOf: (tenantId) => ({
      workflowType: 'quotaBootstrapWorkflow',
      options: {
        workflowId: bootstrapWorkflowId(tenantId),
        taskQueue: quotaQueue(deps),
        args: [{ tenantId }],
        typedSearchAttributes: executionSearchAttributes(tenantId, 'quota'),
        ...bootstrapSummary(tenantId),
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
      },
    }),
    markStarted: (tenantIds) => markBootstrapsStarted(deps.pool, tenantIds),
  };
}

export function createBootstrapStarter(
  deps: Pick<PlatformDeps, 'pool' | 'config' | 'temporal' | 'logger'>,
) {
  return createOutboxDispatcher(deps, bootstrapStarts(deps));
}
export type BootstrapStarter = ReturnType<typeof createBootstrapStarter>;
