import { z } from 'zod';
import { sql } from '../pool';
import type { Queryable } from './queryable';

export interface KeyConstraints {
  plan_ids?: string[] | null;
  subject_prefix?: string | null;
  catalog_name_prefix?: string | null;
}

export interface ApiKeyRow {
  id: string;
  key_id: string;
  tenant_id: string | null;
  name: string;
  scopes: string[];
  actor: string;
  status: 'active' | 'revoked';
  constraints: KeyConstraints | null;
  created_by_actor: string | null;
  created_at: string;
  last_used_at: string | null;
}

/** A key as authentication needs it: its row, the secret's hash and its tenant's status. */
export interface CredentialRow extends ApiKeyRow {
  secret_sha256_hex: string;
  tenant_status: 'active' | 'suspended' | null;
  tenant_bootstrap_state: string | null;
}

const COLUMNS = sql.fragment`k.id, k.key_id, k.tenant_id, k.name, k.scopes, k.actor, k.status,
  k.constraints, k.created_by_actor, k.created_at, k.last_used_at`;

export async function insertKey(
  db: Queryable,
  key: Omit<ApiKeyRow, 'status' | 'created_at' | 'last_used_at'> & { secretSha256: Buffer },
): Promise<ApiKeyRow> {
  return (await db.one(sql.unsafe`
    INSERT INTO quota.api_keys AS k
      (id, key_id, secret_sha256, tenant_id, name, scopes, actor, constraints, created_by_actor)
    VALUES (${key.id}, ${key.key_id}, ${sql.binary(key.secretSha256)}, ${key.tenant_id},
            ${key.name}, ${sql.array(key.scopes, 'text')}, ${key.actor},
            ${key.constraints === null ? null : sql.jsonb(key.constraints as never)},
            ${key.created_by_actor})
    RETURNING ${COLUMNS}`)) as ApiKeyRow;
}

export async function findCredential(db: Queryable, keyId: string): Promise<CredentialRow | null> {
  return (await db.maybeOne(sql.unsafe`
    SELECT ${COLUMNS}, encode(k.secret_sha256, 'hex') AS secret_sha256_hex,
           t.status AS tenant_status, t.bootstrap_state AS tenant_bootstrap_state
    FROM quota.api_keys k LEFT JOIN quota.tenants t ON t.id = k.tenant_id
    WHERE k.key_id = ${keyId}`)) as CredentialRow | null;
}

/** Every key of a tenant as authentication needs it (the revoked too: they answer 401 alone). */
export async function tenantCredentials(db: Queryable, tenantId: string): Promise<CredentialRow[]> {
  return (await db.any(sql.unsafe`
    SELECT ${COLUMNS}, encode(k.secret_sha256, 'hex') AS secret_sha256_hex,
           t.status AS tenant_status, t.bootstrap_state AS tenant_bootstrap_state
    FROM quota.api_keys k JOIN quota.tenants t ON t.id = k.tenant_id
    WHERE k.tenant_id = ${tenantId}`)) as CredentialRow[];
}

/** A tenant's key by row id (an operator key when tenantId is null). */
export async function findKey(
  db: Queryable,
  tenantId: string | null,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ApiKeyRow | null> {
  const lock = options.lock ? sql.fragment`FOR UPDATE` : sql.fragment``;
  return (await db.maybeOne(sql.unsafe`
    SELECT ${COLUMNS} FROM quota.api_keys k
    WHERE k.id = ${id} AND k.tenant_id IS NOT DISTINCT FROM ${tenantId} ${lock}`)) as ApiKeyRow | null;
}

/** Oldest first; a null tenant: the operator keys. */
export async function listKeys(db: Queryable, tenantId: string | null): Promise<ApiKeyRow[]> {
  return (await db.any(sql.unsafe`
    SELECT ${COLUMNS} FROM quota.api_keys k WHERE k.tenant_id IS NOT DISTINCT FROM ${tenantId}
    ORDER BY k.created_at, k.id`)) as ApiKeyRow[];
}

export async function updateKey(
  db: Queryable,
  id: string,
  change: {
    name?: string;
    constraints?: KeyConstraints | null;
    status?: 'revoked';
    rotated?: { keyId: string; secretSha256: Buffer };
  },
): Promise<ApiKeyRow> {
  const set = [sql.fragment`updated_at = now()`];
  if (change.name !== undefined) set.push(sql.fragment`name = ${change.name}`);
  if (change.constraints !== undefined)
    set.push(
      sql.fragment`constraints = ${change.constraints === null ? null : sql.jsonb(change.constraints as never)}`,
    );
  if (change.status === 'revoked')
    set.push(sql.fragment`status = 'revoked'`, sql.fragment`revoked_at = now()`);
  if (change.rotated)
    set.push(
      sql.fragment`key_id = ${change.rotated.keyId}`,
      sql.fragment`secret_sha256 = ${sql.binary(change.rotated.secretSha256)}`,
      sql.fragment`rotated_at = now()`,
    );
  return (await db.one(sql.unsafe`
    UPDATE quota.api_keys AS k SET ${sql.join(set, sql.fragment`, `)}
    WHERE k.id = ${id} RETURNING ${COLUMNS}`)) as ApiKeyRow;
}

/** Last use, batched: each key's latest instant, never moved back. */
export async function recordLastUse(db: Queryable, uses: Map<string, Date>): Promise<void> {
  if (uses.size === 0) return;
  const ids = [...uses.keys()];
  const instants = ids.map((id) => uses.get(id)!.toISOString());
  await db.query(sql.unsafe`
    UPDATE quota.api_keys k SET last_used_at = greatest(k.last_used_at, u.at)
    FROM unnest(${sql.array(ids, 'text')}, ${sql.array(instants, 'timestamptz')}) AS u(id, at)
    WHERE k.id = u.id`);
}

const keyScopesRow = z.object({
  id: z.string(),
  tenant_id: z.string(),
  scopes: z.array(z.string()),
});
export type KeyScopesRow = z.infer<typeof keyScopesRow>;

/** The tenant's active keys with their scopes, by row id (the grants a bootstrap writes). */
export async function activeKeyScopes(db: Queryable, tenantId: string): Promise<KeyScopesRow[]> {
  const rows = await db.any(sql.type(keyScopesRow)`
    SELECT id, tenant_id, scopes FROM quota.api_keys
    WHERE tenant_id = ${tenantId} AND status = 'active' ORDER BY id`);
  return [...rows];
}
