import { z } from 'zod';
import { sql } from '../pool';
import type { Queryable } from './queryable';

/** A key's constraints (jsonb, as services/quota/constraints.ts normalizes them). */
export const keyConstraints = z.object({
  plan_ids: z.array(z.string()).nullable().optional(),
  subject_prefix: z.string().nullable().optional(),
  catalog_name_prefix: z.string().nullable().optional(),
});
export type KeyConstraints = z.infer<typeof keyConstraints>;

export const apiKeyRow = z.object({
  id: z.string(),
  key_id: z.string(),
  tenant_id: z.string().nullable(),
  name: z.string(),
  scopes: z.array(z.string()),
  actor: z.string(),
  status: z.enum(['active', 'revoked']),
  constraints: keyConstraints.nullable(),
  created_by_actor: z.string().nullable(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
});
export type ApiKeyRow = z.infer<typeof apiKeyRow>;

const COLUMNS = sql.fragment`k.id, k.key_id, k.tenant_id, k.name, k.scopes, k.actor, k.status,
  k.constraints, k.created_by_actor, k.created_at, k.last_used_at`;

/** A key as authentication needs it: its row, the secret's hash and its tenant's status. */
export const credentialRow = apiKeyRow.extend({
  secret_sha256_hex: z.string(),
  tenant_status: z.enum(['active', 'suspended']).nullable(),
  tenant_bootstrap_state: z.string().nullable(),
});
export type CredentialRow = z.infer<typeof credentialRow>;

export async function insertKey(
  db: Queryable,
  key: Omit<ApiKeyRow, 'status' | 'created_at' | 'last_used_at'> & { secretSha256: Buffer },
): Promise<ApiKeyRow> {
  return db.one(sql.type(apiKeyRow)`
    INSERT INTO quota.api_keys AS k
      (id, key_id, secret_sha256, tenant_id, name, scopes, actor, constraints, created_by_actor)
    VALUES (${key.id}, ${key.key_id}, ${sql.binary(key.secretSha256)}, ${key.tenant_id},
            ${key.name}, ${sql.array(key.scopes, 'text')}, ${key.actor},
            ${key.constraints === null ? null : sql.jsonb(key.constraints as never)},
            ${key.created_by_actor})
    RETURNING ${COLUMNS}`);
}

export async function findCredential(db: Queryable, keyId: string): Promise<CredentialRow | null> {
  return db.maybeOne(sql.type(credentialRow)`
    SELECT ${COLUMNS}, encode(k.secret_sha256, 'hex') AS secret_sha256_hex,
           t.status AS tenant_status, t.bootstrap_state AS tenant_bootstrap_state
    FROM quota.api_keys k LEFT JOIN quota.tenants t ON t.id = k.tenant_id
    WHERE k.key_id = ${keyId}`);
}

/** Every key of a tenant as authentication needs it (the revoked too: they answer 401 alone). */
export async function tenantCredentials(
  db: Queryable,
  tenantId: string,
): Promise<readonly CredentialRow[]> {
  return db.any(sql.type(credentialRow)`
    SELECT ${COLUMNS}, encode(k.secret_sha256, 'hex') AS secret_sha256_hex,
           t.status AS tenant_status, t.bootstrap_state AS tenant_bootstrap_state
    FROM quota.api_keys k JOIN quota.tenants t ON t.id = k.tenant_id
    WHERE k.tenant_id = ${tenantId}`);
}

/** A tenant's key by row id (an operator key when tenantId is null). */
export async function findKey(
  db: Queryable,
  tenantId: string | null,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ApiKeyRow | null> {
  const lock = options.lock ? sql.fragment`FOR UPDATE` : sql.fragment``;
  return db.maybeOne(sql.type(apiKeyRow)`
    SELECT ${COLUMNS} FROM quota.api_keys k
    WHERE k.id = ${id} AND k.tenant_id IS NOT DISTINCT FROM ${tenantId} ${lock}`);
}

/** Oldest first; a null tenant: the operator keys. */
export async function listKeys(
  db: Queryable,
  tenantId: string | null,
): Promise<readonly ApiKeyRow[]> {
  return db.any(sql.type(apiKeyRow)`
    SELECT ${COLUMNS} FROM quota.api_keys k WHERE k.tenant_id IS NOT DISTINCT FROM ${tenantId}
    ORDER BY k.created_at, k.id`);
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
      sql.fragment`constraints = ${change.constraints === null ? null : sql.jsonb(change.constraints)}`,
    );
  if (change.status === 'revoked')
    set.push(sql.fragment`status = 'revoked'`, sql.fragment`revoked_at = now()`);
  if (change.rotated)
    set.push(
      sql.fragment`key_id = ${change.rotated.keyId}`,
      sql.fragment`secret_sha256 = ${sql.binary(change.rotated.secretSha256)}`,
      sql.fragment`rotated_at = now()`,
    );
  return db.one(sql.type(apiKeyRow)`
    UPDATE quota.api_keys AS k SET ${sql.join(set, sql.fragment`, `)}
    WHERE k.id = ${id} RETURNING ${COLUMNS}`);
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
