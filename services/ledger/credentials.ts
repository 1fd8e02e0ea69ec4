import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ledgerError } from './errors';
import { v7 as uuidv7 } from 'uuid';
import { isLoginRefused, type DatabasePool } from '../../db/pool';
import { mapDatabaseError, type Tx } from '../../db/ledger/context';
import {
  findCredential,
  findCredentialAndClaim,
  findCredentialsAndClaims,
  insertKey,
  type CredentialClaimRequest,
  type ClaimRow,
  type Credential,
  type KeyRow,
  type LedgerRole,
} from '../../db/ledger/tenants';
import type { DomainError } from '../../platform/errors';
import { NaturalBatcher } from '../../platform/batching';

/** Bytes of randomness in a key secret (256 bits). */
const SECRET_BYTES = 32;
/** `lk_<key id as 32 hex>_<secret as 43 base64url chars>`. */
const TOKEN = /^lk_([0-9a-f]{32})_([A-Za-z0-9_-]{43})$/;
const BEARER = /^Bearer ([^\s]+)$/i;

export interface Principal {
  keyId: string;
  tenantId: string;
  role: LedgerRole;
  /** The tenant usage is metered against: the parent of a sub-tenant, else itself. */
  rootTenantId: string;
  isSubTenant: boolean;
}

export const sha256 = (text: string | Buffer): Buffer => createHash('sha256').update(text).digest();

const hexToUuid = (hex: string): string =>
  `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;

export function tokenOf(keyId: string, secret: string): string {
  return `lk_${keyId.replace(/-/g, '')}_${secret}`;
}

export function parseToken(token: string): { keyId: string; secret: string } | null {
  const match = TOKEN.exec(token);
  return match ? { keyId: hexToUuid(match[1]!), secret: match[2]! } : null;
}

export interface IssuedKey extends KeyRow {
  /** The bearer token; shown once, only its hash is stored. */
  secret: string;
}

/** Makes a key for a tenant (operator CLI or partner route); the secret leaves only here. */
export async function issueKey(
  tx: Tx,
  input: { tenantId: string; role: LedgerRole; label: string | null; ttlDays: number | null },
): Promise<IssuedKey> {
  const keyId = uuidv7();
  const secret = randomBytes(SECRET_BYTES).toString('base64url');
  const row = await insertKey(tx, { ...input, keyId, secretSha256: sha256(secret) });
  return { ...row, secret: tokenOf(keyId, secret) };
}

const unauthenticated = (message: string) => ledgerError('UNAUTHENTICATED', { message });

function asBuffer(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (typeof value === 'string' && value.startsWith('\\x'))
    return Buffer.from(value.slice(2), 'hex');
  return Buffer.alloc(0);
}

/** The key id and secret of a bearer header, or the spec's 401. */
export function bearerOf(authorization: string | undefined): { keyId: string; secret: string } {
  const bearer = BEARER.exec(authorization ?? '');
  if (!bearer) throw unauthenticated('missing or malformed bearer credential');
  const parsed = parseToken(bearer[1]!);
  if (!parsed) throw unauthenticated('malformed credential');
  return parsed;
}

export const authzUnavailable = (cause: unknown) =>
  ledgerError('AUTHZ_UNAVAILABLE', {
    message: 'authorization store unreachable; retry',
    retryAfterSeconds: 1,
    cause,
  });

/**
 * Why the key store could not be asked: its database refuses the service's own login (503
 * AUTHZ_CREDENTIAL_REJECTED, as mapDatabaseError gives it on every other path), or it is
 * unreachable, stalled or failed otherwise (503 AUTHZ_UNAVAILABLE). Both are transient.
 */
function authzFailure(cause: unknown): DomainError {
  return isLoginRefused(cause) ? (mapDatabaseError(cause) as DomainError) : authzUnavailable(cause);
}

/**
 * Keys that authenticated in this app, with what of them never changes: tenant, parent, role
 * and secret hash. It lets the posting route send a request's posting with the check of its key
 * in one statement (postInOneStatement, services/ledger/posting-statement.ts); revocation, expiry and
 * the tenants' status are still read by that statement, so remembering a key never admits a
 * request the database would refuse. Oldest first out past the bound. Each ledger app keeps its
 * own (made with its batchers), so two apps in one process never share what they learnt.
 */
export const REMEMBERED_KEYS_MAX = 10_000;

export class RememberedKeys {
  private readonly keys = new Map<string, { secretSha256: Buffer; principal: Principal }>();

  remember(secretSha256: Buffer, principal: Principal): void {
    if (this.keys.has(principal.keyId)) return;
    if (this.keys.size >= REMEMBERED_KEYS_MAX) this.keys.delete(this.keys.keys().next().value!);
    this.keys.set(principal.keyId, { secretSha256, principal });
  }

  /**
   * The principal of a bearer header whose key authenticated before, with the secret's hash,
   * when the presented secret is that key's; else null (the caller authenticates).
   */
  principalOf(
    authorization: string | undefined,
  ): { principal: Principal; secretSha256: Buffer } | null {
    const bearer = BEARER.exec(authorization ?? '');
    const parsed = bearer && parseToken(bearer[1]!);
    const known = parsed && this.keys.get(parsed.keyId);
    if (!known) return null;
    const presented = sha256(parsed.secret);
    return timingSafeEqual(known.secretSha256, presented)
      ? { principal: known.principal, secretSha256: presented }
      : null;
  }

  /** The database no longer admits this key (revoked, expired, tenant suspended): ask it again next time. */
  forget(keyId: string): void {
    this.keys.delete(keyId);
  }
}

/**
 * Judges a stored credential against the presented secret's hash: a principal, or the spec's
 * 401/403.
 */
export function judgeCredential(credential: Credential | null, presented: Buffer): Principal {
  const stored = credential ? asBuffer(credential.secret_sha256) : Buffer.alloc(32);
  const matches = stored.length === presented.length && timingSafeEqual(stored, presented);
  if (!credential || !matches || credential.revoked)
    throw unauthenticated('unknown or revoked credential');
  if (credential.expired)
    throw ledgerError('CREDENTIAL_EXPIRED', { message: 'credential expired' });
  if (credential.tenant_status === null) {
    throw ledgerError('TENANT_NOT_PROVISIONED', { message: 'tenant not provisioned' });
  }
  if (
    credential.tenant_status !== 'active' ||
    (credential.parent_id !== null && credential.parent_status !== 'active')
  ) {
    throw ledgerError('TENANT_SUSPENDED', { message: 'tenant suspended' });
  }
  const principal: Principal = {
    keyId: credential.key_id,
    tenantId: credential.tenant_id,
    role: credential.role,
    rootTenantId: credential.parent_id ?? credential.tenant_id,
    isSubTenant: credential.parent_id !== null,
  };
  return principal;
}

/**
 * Resolves a bearer header to a principal, or throws the spec's 401/403/503. The key store is
 * the ledger's own Postgres: when it cannot be asked, the answer is 503 AUTHZ_UNAVAILABLE, or
 * AUTHZ_CREDENTIAL_REJECTED when it refuses the service's own login (authzFailure).
 */
export async function authenticate(
  deps: { pool: DatabasePool; keys: RememberedKeys },
  authorization: string | undefined,
): Promise<Principal> {
  const parsed = bearerOf(authorization);
  let credential;
  try {
    credential = await findCredential(deps.pool, parsed.keyId);
  } catch (error) {
    throw authzFailure(error);
  }
  const secretSha256 = sha256(parsed.secret);
  const principal = judgeCredential(credential, secretSha256);
  deps.keys.remember(secretSha256, principal);
  return principal;
}

/** Key lookups with claims per database call (one commit for the claims of the batch). */
export const AUTH_BATCH_SIZE_MAX = 64;
/** Such calls in flight at once per process (requests arriving meanwhile queue). */
export const AUTH_BATCH_FLIGHTS_MAX = 1;

type ClaimedCredential = Awaited<ReturnType<typeof findCredentialAndClaim>>;

/** Key lookups with their claims, batched (createCredentialBatcher). */
export type CredentialBatcher = NaturalBatcher<CredentialClaimRequest, ClaimedCredential>;

/**
 * A batcher of key lookups and claims of the pool (ledger.authenticate_and_claim_many). Each
 * ledger app makes its own with its pool (services/ledger/batchers.ts).
 */
export function createCredentialBatcher(pool: DatabasePool): CredentialBatcher {
  return new NaturalBatcher({
    sizeMax: AUTH_BATCH_SIZE_MAX,
    flightsMax: AUTH_BATCH_FLIGHTS_MAX,
    runBatch: (_partition, requests) => findCredentialsAndClaims(pool, requests),
    runOne: (_partition, r) =>
      findCredentialAndClaim(pool, r.keyId, r.secretSha256, r.role, r.claim),
  });
}

/**
 * authenticate() for a mutating request, with its idempotency claim in the same round trip
 * (findCredentialAndClaim): the claim is made only when the credential authenticates with
 * `role`, so every refusal comes out in the same order as authenticate() then the claim.
 * Concurrent requests share one statement and one commit (`credentials`, the app's batcher); each
 * gets its own row.
 */
export async function authenticateAndClaim(
  deps: { credentials: CredentialBatcher; keys: RememberedKeys },
  authorization: string | undefined,
  role: LedgerRole,
  claim: { endpoint: string; key: string; requestSha256: Buffer; lockMs: number } | null,
): Promise<{ principal: Principal; claim: ClaimRow | null }> {
  const parsed = bearerOf(authorization);
  const secretSha256 = sha256(parsed.secret);
  let row;
  try {
    row = await deps.credentials.submit('', { keyId: parsed.keyId, secretSha256, role, claim });
  } catch (error) {
    throw authzFailure(error);
  }
  const principal = judgeCredential(row, secretSha256);
  deps.keys.remember(secretSha256, principal);
  return { principal, claim: row && row.claimed !== null ? row : null };
}

export function requireRole(principal: Principal, role: LedgerRole): void {
  if (principal.role !== role) {
    throw ledgerError('FORBIDDEN', { message: `this operation needs a ${role} key` });
  }
}
