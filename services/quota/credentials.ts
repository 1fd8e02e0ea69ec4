import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ulid } from '../../db/ids';
import type { KeyConstraints } from '../../db/quota/keys';
import type { CatalogueCache, Credential } from './catalogue-cache';
import { quotaError } from './errors';

/** `qk_<key id: a ULID>_<secret: 32 random bytes as 43 base64url characters>` */
const TOKEN = /^qk_([0-9A-HJKMNP-TV-Z]{26})_([A-Za-z0-9_-]{43})$/;
const BEARER = /^Bearer ([^\s]+)$/i;
const SECRET_BYTES = 32;

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

/** An operator key's grants are written with it; a tenant's first key's by its bootstrap. */
const grantsWritten = (row: Credential['row']) =>
  row.tenant_id === null || row.tenant_bootstrap_state === 'done';

const unauthorized = () => quotaError('unauthorized');

/** The secret each credential (as read, one per catalogue read) was last presented with. */
const presented = new WeakMap<Credential, Buffer>();

/** Whether `secret` is the credential's: hashed once, then compared as it is. */
function secretMatches(secret: string, credential: Credential): boolean {
  const given = Buffer.from(secret);
  const known = presented.get(credential);
  if (known && known.length === given.length && timingSafeEqual(known, given)) return true;
  const stored = Buffer.from(credential.secretSha256Hex, 'hex');
  const hashed = sha256(secret);
  const matches = stored.length === hashed.length && timingSafeEqual(stored, hashed);
  if (matches) presented.set(credential, given);
  return matches;
}

/**
 * The caller of a request, or the refusal: 401 for no key, a malformed or unknown one, a wrong
 * secret or a revoked key; 403 tenant_suspended; 503 while the tenant's grants are being written.
 * The key is judged by its tenant's catalogue in this process's memory: `verify` compares it with
 * the current generation first; without it, the caller's decision does (catalogue-cache.ts).
 */
export async function authenticate(
  catalogues: CatalogueCache,
  authorization: string | undefined,
  options: { verify: boolean },
): Promise<Principal> {
  const token = BEARER.exec(authorization ?? '')?.[1];
  const parsed = token ? TOKEN.exec(token) : null;
  if (!parsed) throw unauthorized();
  const [, keyId, secret] = parsed as unknown as [string, string, string];
  if (options.verify) await catalogues.verifyKey(keyId);
  const credential = await catalogues.credential(keyId);
  if (!credential || !secretMatches(secret, credential)) throw unauthorized();
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
