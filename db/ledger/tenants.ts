import { z } from 'zod';
import { byteaArray, sql, type DatabasePool } from '../pool';
import type { Tx } from './context';

export type TenantStatus = 'active' | 'suspended';
export type TenantKind = 'production' | 'sandbox';
export type LedgerRole = 'ledger_admin' | 'ledger_poster' | 'ledger_reader' | 'ledger_partner';
export const LEDGER_ROLES: readonly LedgerRole[] = [
  'ledger_admin',
  'ledger_poster',
  'ledger_reader',
  'ledger_partner',
];

export interface TenantRow {
  tenant_id: string;
  parent_id: string | null;
  name: string;
  kind: TenantKind;
  contact_email: string | null;
  status: TenantStatus;
  created_at: string;
  updated_at: string;
}

export interface KeyRow {
  key_id: string;
  tenant_id: string;
  role: LedgerRole;
  label: string | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

const TENANT_COLUMNS = sql.fragment`tenant_id, parent_id, name, kind, contact_email, status, created_at, updated_at`;
const KEY_COLUMNS = sql.fragment`key_id, tenant_id, role, label, created_at, expires_at, revoked_at`;

const isLedgerRole = (role: string): role is LedgerRole =>
  (LEDGER_ROLES as readonly string[]).includes(role);

const keyRow = z.object({
  key_id: z.string(),
  tenant_id: z.string(),
  role: z.string().refine(isLedgerRole),
  label: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
}) satisfies z.ZodType<KeyRow, z.ZodTypeDef, unknown>;

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
  return (await tx.one(sql.unsafe`
    INSERT INTO ledger.tenants (tenant_id, parent_id, name, kind, contact_email)
    VALUES (${tenant.tenantId}, ${tenant.parentId}, ${tenant.name}, ${tenant.kind}, ${tenant.contactEmail})
    RETURNING ${TENANT_COLUMNS}`)) as TenantRow;
}

export async function findTenant(tx: Tx, tenantId: string): Promise<TenantRow | null> {
  return (await tx.maybeOne(
    sql.unsafe`SELECT ${TENANT_COLUMNS} FROM ledger.tenants WHERE tenant_id = ${tenantId}`,
  )) as TenantRow | null;
}

export async function updateTenant(
  tx: Tx,
  tenantId: string,
  patch: { name?: string; status?: TenantStatus },
): Promise<TenantRow | null> {
  return (await tx.maybeOne(sql.unsafe`
    UPDATE ledger.tenants
    SET name = coalesce(${patch.name ?? null}, name), status = coalesce(${patch.status ?? null}, status), updated_at = ledger.now_ms()
    WHERE tenant_id = ${tenantId}
    RETURNING ${TENANT_COLUMNS}`)) as TenantRow | null;
}

export async function listChildTenants(
  tx: Tx,
  parentId: string,
  limit: number,
  cursor: string | null,
): Promise<TenantRow[]> {
  return (await tx.any(sql.unsafe`
    SELECT ${TENANT_COLUMNS} FROM ledger.tenants
    WHERE parent_id = ${parentId} AND (${cursor}::uuid IS NULL OR tenant_id < ${cursor}::uuid)
    ORDER BY tenant_id DESC LIMIT ${limit}`)) as TenantRow[];
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
  return (await tx.one(sql.unsafe`
    INSERT INTO ledger.api_keys (key_id, tenant_id, secret_sha256, role, label, expires_at)
    VALUES (${key.keyId}, ${key.tenantId}, ${sql.binary(key.secretSha256)}, ${key.role}, ${key.label},
            CASE WHEN ${key.ttlDays}::int IS NULL THEN NULL ELSE ledger.now_ms() + make_interval(days => ${key.ttlDays}::int) END)
    RETURNING ${KEY_COLUMNS}`)) as KeyRow;
}

export async function listKeys(
  tx: Tx,
  tenantId: string,
  limit: number,
  cursor: string | null,
): Promise<KeyRow[]> {
  return (await tx.any(sql.unsafe`
    SELECT ${KEY_COLUMNS} FROM ledger.api_keys
    WHERE tenant_id = ${tenantId} AND (${cursor}::uuid IS NULL OR key_id < ${cursor}::uuid)
    ORDER BY key_id DESC LIMIT ${limit}`)) as KeyRow[];
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

export interface Credential {
  key_id: string;
  tenant_id: string;
  role: LedgerRole;
  secret_sha256: Buffer;
  expired: boolean;
  revoked: boolean;
  tenant_status: TenantStatus | null;
  parent_id: string | null;
  parent_status: TenantStatus | null;
}

/**
 * The key with its tenant and the tenant's parent: one statement, no explicit transaction
 * (ledger.find_credential sets and clears its own row-level-security context).
 */
export async function findCredential(
  pool: DatabasePool,
  keyId: string,
): Promise<Credential | null> {
  return (await pool.maybeOne(
    sql.unsafe`SELECT * FROM ledger.find_credential(${keyId}::uuid)`,
  )) as Credential | null;
}

export interface ClaimRow {
  /** Null when no claim was attempted (the credential cannot pass, or no usable key header). */
  claimed: boolean | null;
  request_sha256: Buffer | string | null;
  state: string | null;
  response_status: number | null;
  response_body: unknown;
}

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
  return (await pool.maybeOne(sql.unsafe`
    SELECT * FROM ledger.authenticate_and_claim(${keyId}::uuid, ${sql.binary(secretSha256)}, ${role},
      ${claim?.endpoint ?? null}, ${claim?.key ?? null}, ${claim ? sql.binary(claim.requestSha256) : null},
      ${claim?.lockMs ?? null}::int)`)) as (Credential & ClaimRow) | null;
}

export interface CredentialClaimRequest {
  keyId: string;
  secretSha256: Buffer;
  role: LedgerRole;
  claim: { endpoint: string; key: string; requestSha256: Buffer; lockMs: number } | null;
}

/**
 * findCredentialAndClaim for several requests in one statement and one commit
 * (ledger.authenticate_and_claim_many, migrations 0009 and 0011): result i is what request i alone would
 * get. The lock budget of a claim is the same for every request of a batch (the first one's).
 */
export async function findCredentialsAndClaims(
  pool: DatabasePool,
  requests: CredentialClaimRequest[],
): Promise<((Credential & ClaimRow) | null)[]> {
  const rows = (await pool.any(sql.unsafe`
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
      ${requests.find((r) => r.claim)?.claim?.lockMs ?? null}::int)`)) as ((Credential &
    ClaimRow) & { ord: number })[];
  const byOrd: ((Credential & ClaimRow) | null)[] = requests.map(() => null);
  for (const { ord, ...row } of rows) byOrd[ord - 1] = row;
  return byOrd;
}
