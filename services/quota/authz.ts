import { deleteTuples, relationsOf, relationsOn, writeTuples } from '../../db/quota/authz';
import type { Queryable } from '../../db/quota/queryable';

/**
 * The access-control client: the only module that knows where grants live. Embedded, they are
 * relation tuples in Postgres (quota.authz_tuples), written in the transaction of the change that
 * grants them; SpiceDB or OpenFGA could replace this module (the same three calls, the same tuple
 * shape: `tenant:<id>#<scope>@key:<key row id>`) without a route changing.
 */
const objectOf = (tenantId: string | null) =>
  tenantId === null ? 'platform' : `tenant:${tenantId}`;
const subjectOf = (keyRowId: string) => `key:${keyRowId}`;

/** Grants a key its scopes on its tenant (on the platform: an operator key). Idempotent. */
export async function grantScopes(
  db: Queryable,
  key: { id: string; tenant_id: string | null; scopes: readonly string[] },
): Promise<void> {
  await writeTuples(
    db,
    key.scopes.map((scope) => ({
      object: objectOf(key.tenant_id),
      relation: scope,
      subject: subjectOf(key.id),
    })),
  );
}

/** Takes every grant of a key back (a revoked key). */
export async function revokeScopes(
  db: Queryable,
  key: { id: string; tenant_id: string | null },
): Promise<void> {
  await deleteTuples(db, objectOf(key.tenant_id), subjectOf(key.id));
}

/** The scopes a key holds on its tenant (or on the platform). */
export async function scopesOf(
  db: Queryable,
  key: { id: string; tenant_id: string | null },
): Promise<string[]> {
  return relationsOf(db, objectOf(key.tenant_id), subjectOf(key.id));
}

/** The scopes of every key of a tenant, by key row id. */
export async function scopesOfTenantKeys(
  db: Queryable,
  tenantId: string,
): Promise<Map<string, string[]>> {
  const scopes = new Map<string, string[]>();
  for (const tuple of await relationsOn(db, objectOf(tenantId))) {
    const keyRowId = tuple.subject.slice('key:'.length);
    scopes.set(keyRowId, [...(scopes.get(keyRowId) ?? []), tuple.relation]);
  }
  return scopes;
}
