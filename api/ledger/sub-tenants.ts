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
import { DomainError } from '../platform/errors';
import { authzUnavailable, issueKey, type Principal } from './credentials';
import { checkText, invalid, isUuid, LIMITS, pageOf, type Page } from './validation';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
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

function assertRootPartner(principal: Principal): void {
  if (principal.isSubTenant) throw invalid('INVALID_TENANT', SUB_TENANT_DEPTH_MESSAGE);
}

export async function createSubTenant(
  pool: DatabasePool,
  principal: Principal,
  body: Record<string, unknown>,
) {
  assertRootPartner(principal);
  const unknownKeys = Object.keys(body).filter(
    (k) => !['name', 'kind', 'contact_email'].includes(k),
  );
  if (unknownKeys.length > 0)
    throw invalid('INVALID_TENANT', `unknown fields: ${unknownKeys.join(', ')}`);
  const name = checkText(body.name, 'name', LIMITS.nameCharsMax, 'INVALID_TENANT', {
    required: true,
  })!;
  if (name.trim() === '') throw invalid('INVALID_TENANT', 'name is required');
  if (body.kind !== 'production' && body.kind !== 'sandbox')
    throw invalid('INVALID_TENANT', 'kind must be production or sandbox');
  const email = checkText(
    body.contact_email,
    'contact_email',
    LIMITS.contactEmailCharsMax,
    'INVALID_TENANT',
    { required: true },
  )!;
  if (!EMAIL.test(email)) throw invalid('INVALID_TENANT', 'contact_email must be an email address');
  const tenant = await withTenant(pool, principal.tenantId, (tx) =>
    insertTenant(tx, {
      tenantId: uuidv7(),
      parentId: principal.tenantId,
      name,
      kind: body.kind as 'production' | 'sandbox',
      contactEmail: email,
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
  body: Record<string, unknown>,
) {
  if ('kind' in body) throw invalid('IMMUTABLE_FIELD', 'kind cannot change', { fields: ['kind'] });
  const unknownKeys = Object.keys(body).filter((k) => !['name', 'status'].includes(k));
  if (unknownKeys.length > 0)
    throw invalid('INVALID_TENANT', `unknown fields: ${unknownKeys.join(', ')}`);
  const name = checkText(body.name, 'name', LIMITS.nameCharsMax, 'INVALID_TENANT');
  if (name !== undefined && name !== null && name.trim() === '')
    throw invalid('INVALID_TENANT', 'name cannot be empty');
  if (body.status !== undefined && body.status !== 'active' && body.status !== 'suspended')
    throw invalid('INVALID_TENANT', 'status must be active or suspended');
  return withTenant(pool, principal.tenantId, async (tx) => {
    await findChild(tx, principal, subTenantId);
    const updated = await updateTenant(tx, subTenantId, {
      name: name ?? undefined,
      status: body.status as 'active' | 'suspended' | undefined,
    });
    return presentSubTenant(updated!);
  });
}

export async function createSubTenantKey(
  pool: DatabasePool,
  principal: Principal,
  subTenantId: string,
  body: Record<string, unknown>,
) {
  const unknownKeys = Object.keys(body).filter((k) => !['label', 'role', 'ttl_days'].includes(k));
  if (unknownKeys.length > 0)
    throw invalid('INVALID_KEY', `unknown fields: ${unknownKeys.join(', ')}`);
  const label =
    checkText(body.label, 'label', LIMITS.labelCharsMax, 'INVALID_KEY', { allowNull: true }) ??
    null;
  if (!SUB_TENANT_KEY_ROLES.includes(body.role as LedgerRole))
    throw invalid('INVALID_KEY', `role must be one of ${SUB_TENANT_KEY_ROLES.join(', ')}`);
  const ttl = body.ttl_days;
  if (
    ttl !== undefined &&
    ttl !== null &&
    (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > LIMITS.ttlDaysMax)
  ) {
    throw invalid('INVALID_KEY', `ttl_days must be an integer from 1 to ${LIMITS.ttlDaysMax}`);
  }
  return withTenant(pool, principal.tenantId, async (tx) => {
    await findChild(tx, principal, subTenantId);
    const key = await issueKey(tx, {
      tenantId: subTenantId,
      role: body.role as LedgerRole,
      label,
      ttlDays: (ttl as number | undefined) ?? null,
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
