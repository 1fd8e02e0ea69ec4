import {
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  ConnectionError,
} from 'slonik';
import { v7 as uuidv7 } from 'uuid';
import { ledgerError } from './errors';
import { sqlState, type DatabasePool } from '../../db/pool';
import { SUB_TENANT_DEPTH_MESSAGE, withTenant } from '../../db/ledger/context';
import {
  findTenant,
  insertTenant,
  listChildTenants,
  listKeys,
  revokeKey,
  updateTenant,
  type KeyRow,
  type LedgerRole,
  type TenantRow,
} from '../../db/ledger/tenants';
import { DomainError } from '../../platform/errors';
import { authzUnavailable, issueKey, type Principal } from './credentials';
import { invalid, isUuid, pageOf, type Page } from './validation';

/** Roles a partner may give a client's key: a sub-tenant cannot have sub-tenants, so no partner. */
export const SUB_TENANT_KEY_ROLES: readonly LedgerRole[] = [
  'ledger_admin',
  'ledger_poster',
  'ledger_reader',
];

const subTenantNotFound = () =>
  ledgerError('SUB_TENANT_NOT_FOUND', { message: 'sub-tenant not found' });

export function presentSubTenant(t: TenantRow) {
  return {
    sub_tenant_id: t.tenant_id,
    parent_tenant_id: t.parent_id,
    name: t.name,
    kind: t.kind,
    contact_email: t.contact_email,
    status: t.status,
    created_at: t.created_at,
    updated_at: t.updated_at,
  };
}

export function presentKey(k: KeyRow) {
  return {
    key_id: k.key_id,
    sub_tenant_id: k.tenant_id,
    role: k.role,
    label: k.label,
    created_at: k.created_at,
    expires_at: k.expires_at,
    revoked_at: k.revoked_at,
  };
}

/** Only a root tenant's partner may make sub-tenants (depth is capped at one). */
export function assertRootPartner(principal: Principal): void {
  if (principal.isSubTenant) throw invalid('INVALID_TENANT', SUB_TENANT_DEPTH_MESSAGE);
}

/** A request validated by routes/sub-tenants.ts (SUB_TENANT_CREATE, INVALID_TENANT). */
export interface SubTenantInput {
  name: string;
  kind: 'production' | 'sandbox';
  contact_email: string;
}

export async function createSubTenant(
  pool: DatabasePool,
  principal: Principal,
  body: SubTenantInput,
) {
  assertRootPartner(principal);
  const tenant = await withTenant(pool, principal.tenantId, (tx) =>
    insertTenant(tx, {
      tenantId: uuidv7(),
      parentId: principal.tenantId,
      name: body.name,
      kind: body.kind,
      contactEmail: body.contact_email,
    }),
  );
  return presentSubTenant(tenant);
}

export async function getSubTenants(pool: DatabasePool, principal: Principal, page: Page) {
  const rows = await withTenant(pool, principal.tenantId, (tx) =>
    listChildTenants(tx, principal.tenantId, page.limit + 1, page.cursor),
  );
  const { items, next_cursor } = pageOf(rows, page.limit, (t) => t.tenant_id);
  return { sub_tenants: items.map(presentSubTenant), next_cursor };
}

async function findChild(
  tx: Parameters<Parameters<typeof withTenant>[2]>[0],
  principal: Principal,
  subTenantId: string,
): Promise<TenantRow> {
  const tenant = isUuid(subTenantId) ? await findTenant(tx, subTenantId) : null;
  if (!tenant || tenant.parent_id !== principal.tenantId) throw subTenantNotFound();
  return tenant;
}

export async function patchSubTenant(
  pool: DatabasePool,
  principal: Principal,
  subTenantId: string,
  body: { name?: string; status?: 'active' | 'suspended' },
) {
  return withTenant(pool, principal.tenantId, async (tx) => {
    await findChild(tx, principal, subTenantId);
    const updated = await updateTenant(tx, subTenantId, {
      name: body.name,
      status: body.status,
    });
    return presentSubTenant(updated!);
  });
}

export async function createSubTenantKey(
  pool: DatabasePool,
  principal: Principal,
  subTenantId: string,
  body: { label?: string | null; role: LedgerRole; ttl_days?: number | null },
) {
  return withTenant(pool, principal.tenantId, async (tx) => {
    await findChild(tx, principal, subTenantId);
    const key = await issueKey(tx, {
      tenantId: subTenantId,
      role: body.role,
      label: body.label ?? null,
      ttlDays: body.ttl_days ?? null,
    });
    return { ...presentKey(key), secret: key.secret };
  });
}

export async function getSubTenantKeys(
  pool: DatabasePool,
  principal: Principal,
  subTenantId: string,
  page: Page,
) {
  return withTenant(pool, principal.tenantId, async (tx) => {
    await findChild(tx, principal, subTenantId);
    const rows = await listKeys(tx, subTenantId, page.limit + 1, page.cursor);
    const { items, next_cursor } = pageOf(rows, page.limit, (k) => k.key_id);
    return { keys: items.map(presentKey), next_cursor };
  });
}

/** Errors of a database that gave no answer: it could not be reached, or the connection was lost. */
const NO_ANSWER = [ConnectionError, BackendTerminatedError, BackendTerminatedUnexpectedlyError];

/**
 * How a revocation that did not happen is answered. The ledger's own refusals (404) and a database
 * refusing the service's login (503 AUTHZ_CREDENTIAL_REJECTED) as they are; no answer from the
 * database (unreachable, or the connection lost, perhaps during COMMIT) 503 AUTHZ_UNAVAILABLE: a
 * retry is safe, revocation being idempotent. Any refusal of the revocation by the database (the
 * key's row locked past the lock budget, the statement budget, a constraint) is the spec's 502
 * REVOCATION_FAILED: its transaction rolled back, so nothing changed and the key still works.
 */
function revocationFailure(error: unknown): unknown {
  if (error instanceof DomainError && error.cause === undefined) return error;
  if (error instanceof DomainError && error.code === 'AUTHZ_CREDENTIAL_REJECTED') return error;
  if (NO_ANSWER.some((type) => error instanceof type)) return authzUnavailable(error);
  // The database's refusals carry their SQLSTATE, also when mapDatabaseError has made them an
  // DomainError (LOCK_TIMEOUT, STATEMENT_TIMEOUT, ...) with the database's error as its cause.
  if (sqlState(error) !== undefined) {
    return ledgerError('REVOCATION_FAILED', {
      message: 'the key store refused the revocation; nothing changed, the key still works',
      cause: error,
    });
  }
  return error;
}

export async function revokeSubTenantKey(
  pool: DatabasePool,
  principal: Principal,
  subTenantId: string,
  keyId: string,
) {
  try {
    return await withTenant(pool, principal.tenantId, async (tx) => {
      await findChild(tx, principal, subTenantId);
      const key = isUuid(keyId) ? await revokeKey(tx, subTenantId, keyId) : null;
      if (!key) throw ledgerError('KEY_NOT_FOUND', { message: 'key not found' });
      return presentKey(key);
    });
  } catch (error) {
    throw revocationFailure(error);
  }
}
