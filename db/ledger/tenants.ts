import { z } from 'zod';
import { byteaArray, sql, type DatabasePool } from '../pool';
import type { Tx } from './context';

const tenantStatus = z.enum(['active', 'suspended']);
export type TenantStatus = z.infer<typeof tenantStatus>;
const tenantKind = z.enum(['production', 'sandbox']);
export type TenantKind = z.infer<typeof tenantKind>;
export type LedgerRole = 'ledger_admin' | 'ledger_poster' | 'ledger_reader' | 'ledger_partner';
export const LEDGER_ROLES: readonly LedgerRole[] = [
  'ledger_admin',
  'ledger_poster',
  'ledger_reader',
  'ledger_partner',
];

const isLedgerRole = (role: string): role is LedgerRole =>
  (LEDGER_ROLES as readonly string[]).includes(role);
const ledgerRole = z.string().refine(isLedgerRole);

const TENANT_COLUMNS = sql.fragment`tenant_id, parent_id, name, kind, contact_email, status, created_at, updated_at`;
export const tenantRow = z.object({
  tenant_id: z.string(),
  parent_id: z.string().nullable(),
  name: z.string(),
  kind: tenantKind,
  contact_email: z.string().nullable(),
  status: tenantStatus,
  created_at: z.string(),
  updated_at: z.string(),
});
export type TenantRow = z.infer<typeof tenantRow>;

const KEY_COLUMNS = sql.fragment`key_id, tenant_id, role, label, created_at, expires_at, revoked_at`;
export const keyRow = z.object({
  key_id: z.string(),
  tenant_id: z.string(),
  role: ledgerRole,
  label: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});
export type KeyRow = z.infer<typeof keyRow>;

export async function insertTenant(
  tx: Tx,
  tenant: {
    tenantId: string;
    parentId: string | null;
    name: string;
    kind: TenantKind;
    contactEmail: string | null;
  },
): Promise<TenantRow> {
  return tx.one(sql.type(tenantRow)`
    INSERT INTO ledger.tenants (tenant_id, parent_id, name, kind, contact_email)
    VALUES (${tenant.tenantId}, ${tenant.parentId}, ${tenant.name}, ${tenant.kind}, ${tenant.contactEmail})
    RETURNING ${TENANT_COLUMNS}`);
}

export async function findTenant(tx: Tx, tenantId: string): Promise<TenantRow | null> {
  return tx.maybeOne(
    sql.type(tenantRow)`SELECT ${TENANT_COLUMNS} FROM ledger.tenants WHERE tenant_id = ${tenantId}`,
  );
}

export async function updateTenant(
  tx: Tx,
  tenantId: string,
  patch: { name?: string; status?: TenantStatus },
): Promise<TenantRow | null> {
  return tx.maybeOne(sql.type(tenantRow)`
    UPDATE ledger.tenants
    SET name = coalesce(${patch.name ?? null}, name), status = coalesce(${patch.status ?? null}, status), updated_at = ledger.now_ms()
    WHERE tenant_id = ${tenantId}
    RETURNING ${TENANT_COLUMNS}`);
}

export async function listChildTenants(
  tx: Tx,
  parentId: string,
  limit: number,
  cursor: string | null,
): Promise<readonly TenantRow[]> {
  return tx.any(sql.type(tenantRow)`
    SELECT ${TENANT_COLUMNS} FROM ledger.tenants
    WHERE parent_id = ${parentId} AND (${cursor}::uuid IS NULL OR tenant_id < ${cursor}::uuid)
    ORDER BY tenant_id DESC LIMIT ${limit}`);
}

export async function insertKey(
  tx: Tx,
  key: {
    keyId: string;
    tenantId: string;
    secretSha256: Buffer;
    role: LedgerRole;
    label: string | null;
    ttlDays: number | null;
  },
): Promise<KeyRow> {
  return tx.one(sql.type(keyRow)`
    INSERT INTO ledger.api_keys (key_id, tenant_id, secret_sha256, role, label, expires_at)
    VALUES (${key.keyId}, ${key.tenantId}, ${sql.binary(key.secretSha256)}, ${key.role}, ${key.label},
            CASE WHEN ${key.ttlDays}::int IS NULL THEN NULL ELSE ledger.now_ms() + make_interval(days => ${key.ttlDays}::int) END)
    RETURNING ${KEY_COLUMNS}`);
}

export async function listKeys(
  tx: Tx,
  tenantId: string,
  limit: number,
  cursor: string | null,
): Promise<readonly KeyRow[]> {
  return tx.any(sql.type(keyRow)`
    SELECT ${KEY_COLUMNS} FROM ledger.api_keys
    WHERE tenant_id = ${tenantId} AND (${cursor}::uuid IS NULL OR key_id < ${cursor}::uuid)
    ORDER BY key_id DESC LIMIT ${limit}`);
}

/**
 * Revokes the tenant's key; with tenantId null, whichever tenant's (the operator's revoke, in the
 * system context). Idempotent: a revoked key keeps its first revocation instant. Null when there
 * is no such key.
 */
export async function revokeKey(
  tx: Tx,
  tenantId: string | null,
  keyId: string,
): Promise<KeyRow | null> {
  const ofTenant = tenantId === null ? sql.fragment`` : sql.fragment`AND tenant_id = ${tenantId}`;
  return tx.maybeOne(sql.type(keyRow)`
    UPDATE ledger.api_keys SET revoked_at = coalesce(revoked_at, ledger.now_ms())
    WHERE key_id = ${keyId} ${ofTenant}
    RETURNING ${KEY_COLUMNS}`);
}

/** A row of ledger.find_credential. */
export const credentialRow = z.object({
  key_id: z.string(),
  tenant_id: z.string(),
  role: ledgerRole,
  secret_sha256: z.instanceof(Buffer),
  expired: z.boolean(),
  revoked: z.boolean(),
  tenant_status: tenantStatus.nullable(),
  parent_id: z.string().nullable(),
  parent_status: tenantStatus.nullable(),
});
export type Credential = z.infer<typeof credentialRow>;

/**
 * The key with its tenant and the tenant's parent: one statement, no explicit transaction
 * (ledger.find_credential sets and clears its own row-level-security context).
 */
export async function findCredential(
  pool: DatabasePool,
  keyId: string,
): Promise<Credential | null> {
  return pool.maybeOne(
    sql.type(credentialRow)`SELECT * FROM ledger.find_credential(${keyId}::uuid)`,
  );
}

export const claimRow = z.object({
  /** Null when no claim was attempted (the credential cannot pass, or no usable key header). */
  claimed: z.boolean().nullable(),
  request_sha256: z.instanceof(Buffer).nullable(),
  state: z.string().nullable(),
  response_status: z.number().nullable(),
  /** jsonb: the recorded response's body. */
  response_body: z.unknown(),
});
export type ClaimRow = z.infer<typeof claimRow>;

/** A row of ledger.authenticate_and_claim: the credential's columns, then the claim's. */
const credentialClaimRow = credentialRow.merge(claimRow);

/**
 * A mutating request's key lookup and idempotency claim in one statement
 * (ledger.authenticate_and_claim, migration 0006): the key is claimed only for a credential that
 * authenticates with `role`; the credential row is returned for the caller to judge.
 */
export async function findCredentialAndClaim(
  pool: DatabasePool,
  keyId: string,
  secretSha256: Buffer,
  role: LedgerRole,
  claim: { endpoint: string; key: string; requestSha256: Buffer; lockMs: number } | null,
): Promise<(Credential & ClaimRow) | null> {
  return pool.maybeOne(sql.type(credentialClaimRow)`
    SELECT * FROM ledger.authenticate_and_claim(${keyId}::uuid, ${sql.binary(secretSha256)}, ${role},
      ${claim?.endpoint ?? null}, ${claim?.key ?? null}, ${claim ? sql.binary(claim.requestSha256) : null},
      ${claim?.lockMs ?? null}::int)`);
}

export interface CredentialClaimRequest {
  keyId: string;
  secretSha256: Buffer;
  role: LedgerRole;
  claim: { endpoint: string; key: string; requestSha256: Buffer; lockMs: number } | null;
}

/** A row of ledger.authenticate_and_claim_many: the request's position (from 1), then the row. */
const orderedCredentialClaimRow = z.object({ ord: z.number() }).merge(credentialClaimRow);

/**
 * findCredentialAndClaim for several requests in one statement and one commit
 * (ledger.authenticate_and_claim_many, migrations 0009 and 0011): result i is what request i alone would
 * get. The lock budget of a claim is the same for every request of a batch (the first one's).
 */
export async function findCredentialsAndClaims(
  pool: DatabasePool,
  requests: CredentialClaimRequest[],
): Promise<((Credential & ClaimRow) | null)[]> {
  const rows = await pool.any(sql.type(orderedCredentialClaimRow)`
    SELECT * FROM ledger.authenticate_and_claim_many(
      ${sql.array(
        requests.map((r) => r.keyId),
        'uuid',
      )},
      ${sql.array(
        requests.map((r) => r.secretSha256),
        'bytea',
      )},
      ${sql.array(
        requests.map((r) => r.role),
        'text',
      )},
      ${sql.array(
        requests.map((r) => r.claim?.endpoint ?? null),
        'text',
      )},
      ${sql.array(
        requests.map((r) => r.claim?.key ?? null),
        'text',
      )},
      ${byteaArray(requests.map((r) => r.claim?.requestSha256 ?? null))},
      ${requests.find((r) => r.claim)?.claim?.lockMs ?? null}::int)`);
  const byOrd: ((Credential & ClaimRow) | null)[] = requests.map(() => null);
  for (const { ord, ...row } of rows) byOrd[ord - 1] = row;
  return byOrd;
}
