import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ulid } from '../../db/ids';
import type { DatabasePool } from '../../db/pool';
import type { Redis } from '../../db/redis';
import { findCredential, type CredentialRow, type KeyConstraints } from '../../db/quota/keys';
import { isBackendUnreachable } from '../../db/unreachable';
import { scopesOf } from './authz';
import { quotaError } from './errors';

/** `qk_<key id: a ULID>_<secret: 32 random bytes as 43 base64url characters>` */
const TOKEN = /^qk_([0-9A-HJKMNP-TV-Z]{26})_([A-Za-z0-9_-]{43})$/;
const BEARER = /^Bearer ([^\s]+)$/i;
const SECRET_BYTES = 32;
/** How long a key's credential is kept in Redis; every change of the key rewrites it at once. */
export const CREDENTIAL_CACHE_SECONDS = 300;

export const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();

/** Who is calling: the key, its tenant (null: an operator key), what it may do and to whom. */
export interface Principal {
  keyRowId: string;
  keyId: string;
  tenantId: string | null;
  actor: string;
  scopes: string[];
  constraints: KeyConstraints | null;
}

/** Who an audit entry names: the acting key's actor and row, in the tenant it acted on. */
export const actedBy = (principal: Principal, tenantId: string | null) => ({
  tenantId,
  actor: principal.actor,
  keyRowId: principal.keyRowId,
});

/** A new secret for a key: the token shown once, and what is stored of it. */
export function newSecret(): { keyId: string; token: string; secretSha256: Buffer } {
  const keyId = ulid();
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  return { keyId, token: `qk_${keyId}_${secret}`, secretSha256: sha256(secret) };
}

/** What Redis keeps of a key: enough to authenticate and authorize without Postgres. */
interface CachedCredential {
  row: Omit<CredentialRow, 'secret_sha256_hex'>;
  secretSha256Hex: string;
  scopes: string[];
}

const cacheKey = (keyId: string) => `credential:${keyId}`;

async function loadCredential(pool: DatabasePool, keyId: string): Promise<CachedCredential | null> {
  const row = await findCredential(pool, keyId);
  if (!row) return null;
  const { secret_sha256_hex: secretSha256Hex, ...rest } = row;
  return { row: rest, secretSha256Hex, scopes: await scopesOf(pool, row) };
}

/**
 * A key's credential: from Redis, else from Postgres (then cached unless its tenant's grants are
 * not yet written). Filling the cache never overwrites (NX): a change of the key writes the
 * entry itself (refreshCredentials), and a reader that read before the change must not put the
 * old state back. Redis out of reach: Postgres alone answers.
 */
async function credentialOf(
  deps: { pool: DatabasePool; redis: Redis },
  keyId: string,
): Promise<CachedCredential | null> {
  const cached = await deps.redis.get(cacheKey(keyId)).catch(ignoreUnreachable);
  if (cached) return JSON.parse(cached) as CachedCredential;
  const credential = await loadCredential(deps.pool, keyId);
  if (credential && grantsWritten(credential.row))
    await deps.redis
      .set(cacheKey(keyId), JSON.stringify(credential), 'EX', CREDENTIAL_CACHE_SECONDS, 'NX')
      .catch(ignoreUnreachable);
  return credential;
}

/** An operator key's grants are written with it; a tenant's first key's by its bootstrap. */
const grantsWritten = (row: CachedCredential['row']) =>
  row.tenant_id === null || row.tenant_bootstrap_state === 'done';

function ignoreUnreachable(error: unknown): null {
  if (isBackendUnreachable(error)) return null;
  throw error;
}

/**
 * Rewrites the cached credentials of keys after a change committed (a patch, a rotation, a
 * revocation, a tenant suspended or its grants written), so the next request on any process sees
 * it. A key id no longer in use (a rotated secret) is deleted.
 */
export async function refreshCredentials(
  deps: { pool: DatabasePool; redis: Redis },
  keyIds: string[],
): Promise<void> {
  for (const keyId of keyIds) {
    const credential = await loadCredential(deps.pool, keyId);
    const write = credential
      ? deps.redis.set(cacheKey(keyId), JSON.stringify(credential), 'EX', CREDENTIAL_CACHE_SECONDS)
      : deps.redis.del(cacheKey(keyId));
    await write.catch(ignoreUnreachable);
  }
}

const unauthorized = () => quotaError('unauthorized');

function secretMatches(secret: string, storedHex: string): boolean {
  const stored = Buffer.from(storedHex, 'hex');
  const given = sha256(secret);
  return stored.length === given.length && timingSafeEqual(stored, given);
}

/**
 * The caller of a request, or the refusal: 401 for no key, a malformed or unknown one, a wrong
 * secret or a revoked key; 403 tenant_suspended; 503 while the tenant's grants are being written.
 */
export async function authenticate(
  deps: { pool: DatabasePool; redis: Redis },
  authorization: string | undefined,
): Promise<Principal> {
  const token = BEARER.exec(authorization ?? '')?.[1];
  const parsed = token ? TOKEN.exec(token) : null;
  if (!parsed) throw unauthorized();
  const [, keyId, secret] = parsed as unknown as [string, string, string];
  const credential = await credentialOf(deps, keyId);
  if (!credential || !secretMatches(secret, credential.secretSha256Hex)) throw unauthorized();
  const { row } = credential;
  if (row.status !== 'active') throw unauthorized();
  if (row.tenant_status === 'suspended') throw quotaError('tenant_suspended');
  if (!grantsWritten(row) && credential.scopes.length === 0)
    throw quotaError('tenant_bootstrap_pending', { retryAfterSeconds: 1 });
  return {
    keyRowId: row.id,
    keyId: row.key_id,
    tenantId: row.tenant_id,
    actor: row.actor,
    scopes: credential.scopes,
    constraints: row.constraints,
  };
}
