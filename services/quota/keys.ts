import type { DatabasePool } from '../../db/pool';
import type { Redis } from '../../db/redis';
import { insertAudit } from '../../db/quota/audit';
import {
  findKey,
  insertKey,
  listKeys,
  updateKey,
  type ApiKeyRow,
  type KeyConstraints,
} from '../../db/quota/keys';
import type { Queryable } from '../../db/quota/queryable';
import { ulid } from '../../db/ids';
import { grantScopes, revokeScopes } from './authz';
import { normalizeConstraints, withinConstraints } from './constraints';
import { announceChange } from './catalogue-cache';
import { actedBy, newSecret, type Principal } from './credentials';
import { quotaError } from './errors';

export interface KeyDeps {
  pool: DatabasePool;
  redis: Redis;
}

/** ApiKeyOut: the row as the API shows it (the spec's fields: not its tenant, never the secret). */
export type ApiKeyOut = Omit<ApiKeyRow, 'tenant_id'>;
/** ApiKeyMinted: the key and its secret, shown once. */
export type ApiKeyMinted = ApiKeyOut & { key: string };

export function apiKeyOut<T extends ApiKeyRow>({
  tenant_id: _tenant,
  ...shown
}: T): Omit<T, 'tenant_id'> {
  return shown;
}

export interface ApiKeyCreate {
  name: string;
  scopes: string[];
  actor: string;
  constraints: KeyConstraints | null;
}

/** The tenant a principal acts for; an operator key has none and may not use tenant routes. */
export function tenantOf(principal: Principal): string {
  if (principal.tenantId === null) throw quotaError('tenant_key_required');
  return principal.tenantId;
}

/**
 * Makes a key row with its secret (and, with `grant`, its grants). A key minted for another actor
 * records its issuer in created_by_actor.
 */
export async function insertNewKey(
  db: Queryable,
  input: ApiKeyCreate & { tenantId: string | null; issuerActor: string; grant: boolean },
): Promise<ApiKeyRow & { key: string }> {
  const secret = newSecret();
  const row = await insertKey(db, {
    id: `key_${ulid()}`,
    key_id: secret.keyId,
    secretSha256: secret.secretSha256,
    tenant_id: input.tenantId,
    name: input.name,
    scopes: [...new Set(input.scopes)],
    actor: input.actor,
    constraints: normalizeConstraints(input.constraints),
    created_by_actor: input.actor === input.issuerActor ? null : input.issuerActor,
  });
  if (input.grant) await grantScopes(db, row);
  return { ...row, key: secret.token };
}

/** A key may give only what it holds: its scopes, and constraints at least as tight as its own. */
function refuseEscalation(
  principal: Principal,
  scopes: string[],
  constraints: KeyConstraints | null,
) {
  const extra = scopes.filter((scope) => !principal.scopes.includes(scope));
  if (extra.length > 0 || !withinConstraints(principal.constraints, constraints))
    throw quotaError('scope_escalation');
}

const auditOf = (principal: Principal, tenantId: string | null) => ({
  ...actedBy(principal, tenantId),
  entityType: 'api_key',
});

export async function mintKey(
  deps: KeyDeps,
  principal: Principal,
  input: ApiKeyCreate,
): Promise<ApiKeyMinted> {
  const tenantId = tenantOf(principal);
  refuseEscalation(principal, input.scopes, normalizeConstraints(input.constraints));
  const minted = await deps.pool.transaction(async (tx) => {
    const minted = await insertNewKey(tx, {
      ...input,
      tenantId,
      issuerActor: principal.actor,
      grant: true,
    });
    const { key: _secret, ...after } = minted;
    await insertAudit(tx, {
      ...auditOf(principal, tenantId),
      action: 'api_key.create',
      entityId: minted.id,
      before: null,
      after,
    });
    return apiKeyOut(minted);
  });
  await announceChange(deps, tenantId);
  return minted;
}

export async function listTenantKeys(deps: KeyDeps, principal: Principal): Promise<ApiKeyOut[]> {
  return (await listKeys(deps.pool, tenantOf(principal))).map(apiKeyOut);
}

/** The operator keys (no tenant), oldest first: the operator CLI's list. */
export async function listOperatorKeys(deps: KeyDeps): Promise<ApiKeyOut[]> {
  return (await listKeys(deps.pool, null)).map(apiKeyOut);
}

const refuseRevoked = (): never => {
  throw quotaError('key_revoked');
};

/**
 * Changes a live key in a transaction with its row locked; the audit records before and after;
 * every process judges the key anew once it committed. A revoked key is `whenRevoked`'s.
 * A tenant key changes its tenant's keys; an operator (the CLI) the operator keys, whose
 * tenant is none (the key routes take tenant keys only).
 */
async function changeKey<T extends ApiKeyRow>(
  deps: KeyDeps,
  principal: Principal,
  keyRowId: string,
  action: string,
  change: (tx: Queryable, key: ApiKeyRow) => Promise<T>,
  whenRevoked: (key: ApiKeyRow) => T = refuseRevoked,
): Promise<Omit<T, 'tenant_id'>> {
  const tenantId = principal.tenantId;
  const { before, after } = await deps.pool.transaction(async (tx) => {
    const key = await findKey(tx, tenantId, keyRowId, { lock: true });
    if (!key) throw quotaError('key_not_found');
    if (key.status === 'revoked') return { before: key, after: whenRevoked(key) };
    const changed = await change(tx, key);
    const { key: _secret, ...shown } = changed as T & { key?: string };
    await insertAudit(tx, {
      ...auditOf(principal, tenantId),
      action,
      entityId: key.id,
      before: key,
      after: shown,
    });
    return { before: key, after: changed };
  });
  if (tenantId !== null && after !== before) await announceChange(deps, tenantId);
  return apiKeyOut(after);
}

/** ApiKeyPatch: a new name, and constraints that only tighten (a looser key is a new key). */
export async function patchKey(
  deps: KeyDeps,
  principal: Principal,
  keyRowId: string,
  patch: { name?: string | null; constraints?: KeyConstraints | null },
): Promise<ApiKeyOut> {
  return changeKey(deps, principal, keyRowId, 'api_key.update', async (tx, key) => {
    const constraints =
      patch.constraints === undefined ? undefined : normalizeConstraints(patch.constraints);
    if (constraints !== undefined) {
      refuseEscalation(principal, [], constraints);
      if (!withinConstraints(key.constraints, constraints)) throw quotaError('scope_escalation');
    }
    return updateKey(tx, key.id, { name: patch.name ?? undefined, constraints });
  });
}

/** A new secret on the same row: the old one fails from the next request on. */
export async function rotateKey(
  deps: KeyDeps,
  principal: Principal,
  keyRowId: string,
): Promise<ApiKeyMinted> {
  const secret = newSecret();
  return changeKey(deps, principal, keyRowId, 'api_key.rotate', async (tx, key) => ({
    ...(await updateKey(tx, key.id, { rotated: secret })),
    key: secret.token,
  }));
}

/** Revoked: 401 on its next request. Revoking a revoked key answers it as it is. */
export async function revokeKey(
  deps: KeyDeps,
  principal: Principal,
  keyRowId: string,
): Promise<ApiKeyOut> {
  return changeKey(
    deps,
    principal,
    keyRowId,
    'api_key.revoke',
    async (tx, key) => {
      await revokeScopes(tx, key);
      return updateKey(tx, key.id, { status: 'revoked' });
    },
    (key) => key,
  );
}
