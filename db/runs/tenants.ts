import { createHash } from 'node:crypto';
import { ulid } from '../ids';
import { z } from 'zod';
import { selectOneRow, sql, type DatabasePool } from '../pool';
import { PERMISSIONS, type Permission } from './permissions';
import { QUOTA_FIELDS, tenantQuotasRow, type TenantQuotasRow } from './quotas';

type Queryable = Pick<DatabasePool, 'query' | 'maybeOne' | 'one' | 'any'>;

/** Requests are matched on the SHA-256 of the bearer key; the key itself is never stored. */
export function keySha256(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export const tierRow = z.object({
  tier: z.string(),
  metered: z.boolean(),
  allowed_images: z.array(z.string()).nullable(),
  memory_limit_mb: z.number().nullable(),
  /** numeric: a decimal string. */
  cpu_cores: z.string().nullable(),
  timeout_seconds: z.number().nullable(),
  concurrent_runs: z.number().nullable(),
  daily_runs: z.number().nullable(),
  workflow_nodes: z.number().nullable(),
  retention_days: z.number().nullable(),
  /** bigint: a decimal string. */
  metered_seconds_per_day: z.string().nullable(),
});
export type TierRow = z.infer<typeof tierRow>;

export interface KeyPrincipal {
  keyId: string;
  tenantId: string;
  permissions: Permission[];
  expiresAt: string | null;
  tier: TierRow | null;
  /**
   * The tenant's quotas as read with the key (same statement), so a submit needs no second
   * lookup. Read fresh on every request: a PUT of the quotas binds the very next request.
   */
  quotas: TenantQuotasRow;
}

export const TIER_LIMIT_FIELDS = [
  'memory_limit_mb',
  'cpu_cores',
  'timeout_seconds',
  'concurrent_runs',
  'daily_runs',
  'workflow_nodes',
  'retention_days',
  'metered_seconds_per_day',
] as const;
export type TierLimitField = (typeof TIER_LIMIT_FIELDS)[number];

export async function insertTenant(
  db: Queryable,
  tenantId: string,
  name: string | null,
): Promise<boolean> {
  const result = await db.query(sql.unsafe`
    WITH t AS (
      INSERT INTO runs.tenants (tenant_id, name) VALUES (${tenantId}, ${name})
      ON CONFLICT DO NOTHING RETURNING tenant_id)
    INSERT INTO runs.tenant_quotas (tenant_id) SELECT tenant_id FROM t`);
  return result.rowCount === 1;
}

export async function tenantExists(db: Queryable, tenantId: string): Promise<boolean> {
  return (
    (await db.maybeOne(
      sql.type(selectOneRow)`SELECT 1 FROM runs.tenants WHERE tenant_id = ${tenantId}`,
    )) !== null
  );
}

const tierMeteredRow = z.object({ metered: z.boolean() });

/** Whether the tier is metered; null when there is no such tier. */
export async function tierMetered(db: Queryable, tier: string): Promise<boolean | null> {
  const row = await db.maybeOne(
    sql.type(tierMeteredRow)`SELECT metered FROM runs.tiers WHERE tier = ${tier}`,
  );
  return row?.metered ?? null;
}

export async function insertKey(
  pool: DatabasePool,
  key: {
    key: string;
    tenantId: string;
    permissions: Permission[];
    tier: string | null;
    label: string | null;
    expiresAt: string | null;
  },
): Promise<string> {
  const keyId = ulid();
  await pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`
      INSERT INTO runs.api_keys (key_id, tenant_id, key_sha256, tier, label, expires_at)
      VALUES (${keyId}, ${key.tenantId}, ${keySha256(key.key)}, ${key.tier}, ${key.label}, ${key.expiresAt})`);
    for (const permission of key.permissions) {
      await tx.query(sql.unsafe`
        INSERT INTO runs.api_key_permissions (key_id, permission) VALUES (${keyId}, ${permission})`);
    }
  });
  return keyId;
}

const keyTenantRow = z.object({ tenant_id: z.string() });

/** Revokes by key id; returns the tenant of the key, or null when no live key had that id. */
export async function revokeKey(db: Queryable, keyId: string): Promise<string | null> {
  const row = await db.maybeOne(sql.type(keyTenantRow)`
    UPDATE runs.api_keys SET revoked_at = date_trunc('milliseconds', now())
    WHERE key_id = ${keyId} AND revoked_at IS NULL RETURNING tenant_id`);
  return row?.tenant_id ?? null;
}

/** The live key (not revoked, not expired) with that bearer value, with its tier and permissions. */
export function findPrincipal(db: Queryable, key: string): Promise<KeyPrincipal | null> {
  return livePrincipal(db, sql.fragment`k.key_sha256 = ${keySha256(key)}`);
}

/** The live key with that id (an unattended launch as the key that set it up, a trigger's). */
export function findPrincipalOfKey(db: Queryable, keyId: string): Promise<KeyPrincipal | null> {
  return livePrincipal(db, sql.fragment`k.key_id = ${keyId}`);
}

/** A tiers row as to_jsonb makes it: numeric and bigint as JSON numbers, with updated_at. */
const principalTier = tierRow.extend({
  cpu_cores: z.number().nullable(),
  metered_seconds_per_day: z.number().nullable(),
  updated_at: z.string(),
});

const principalRow = z.object({
  key_id: z.string(),
  tenant_id: z.string(),
  expires_at: z.string().nullable(),
  permissions: z.array(z.enum(PERMISSIONS)),
  tier: principalTier.nullable(),
  /** The tenant's quotas as QUOTA_OBJECT builds them (jsonb: integers as numbers, max_cpu_cores as text). */
  quotas: tenantQuotasRow,
});

async function livePrincipal(
  db: Queryable,
  which: ReturnType<typeof sql.fragment>,
): Promise<KeyPrincipal | null> {
  const row = await db.maybeOne(sql.type(principalRow)`
    SELECT k.key_id, k.tenant_id, k.expires_at,
           COALESCE((SELECT array_agg(p.permission ORDER BY p.permission)
                     FROM runs.api_key_permissions p WHERE p.key_id = k.key_id), '{}') AS permissions,
           CASE WHEN t.tier IS NULL THEN NULL ELSE to_jsonb(t) END AS tier,
           ${QUOTA_OBJECT} AS quotas
    FROM runs.api_keys k LEFT JOIN runs.tiers t ON t.tier = k.tier
    JOIN runs.tenant_quotas q ON q.tenant_id = k.tenant_id
    WHERE ${which} AND k.revoked_at IS NULL
      AND (k.expires_at IS NULL OR k.expires_at > now())`);
  if (!row) return null;
  return {
    keyId: row.key_id,
    tenantId: row.tenant_id,
    expiresAt: row.expires_at,
    permissions: row.permissions,
    tier: row.tier ? normaliseTier(row.tier) : null,
    quotas: row.quotas,
  };
}

/** The quota columns as one JSON object; numeric max_cpu_cores as text (decimal strings). */
const QUOTA_OBJECT = sql.fragment`jsonb_build_object(${sql.join(
  QUOTA_FIELDS.map((f) =>
    f === 'max_cpu_cores'
      ? sql.fragment`${f}::text, q.max_cpu_cores::text`
      : sql.fragment`${f}::text, q.${sql.identifier([f])}`,
  ),
  sql.fragment`, `,
)})`;

/** to_jsonb turns numeric into a JSON number; keep the decimal-string convention of the pool. */
function normaliseTier(tier: z.infer<typeof principalTier>): TierRow {
  const { updated_at: _updated, ...rest } = tier;
  return {
    ...rest,
    cpu_cores: tier.cpu_cores === null ? null : tier.cpu_cores.toString(),
    metered_seconds_per_day:
      tier.metered_seconds_per_day === null ? null : tier.metered_seconds_per_day.toString(),
  };
}

/** Creates or updates a tier; fields left undefined keep their value (NULL on create). */
export async function upsertTier(
  db: Queryable,
  tier: {
    tier: string;
    metered?: boolean;
    allowedImages?: string[] | null;
    limits: Partial<Record<TierLimitField, string | number | null>>;
  },
): Promise<TierRow> {
  await db.query(
    sql.unsafe`INSERT INTO runs.tiers (tier) VALUES (${tier.tier}) ON CONFLICT DO NOTHING`,
  );
  const sets = [sql.fragment`updated_at = date_trunc('milliseconds', now())`];
  if (tier.metered !== undefined) sets.push(sql.fragment`metered = ${tier.metered}`);
  if (tier.allowedImages !== undefined) {
    sets.push(
      tier.allowedImages === null
        ? sql.fragment`allowed_images = NULL`
        : sql.fragment`allowed_images = ${sql.array(tier.allowedImages, 'text')}`,
    );
  }
  for (const field of TIER_LIMIT_FIELDS) {
    const value = tier.limits[field];
    if (value !== undefined)
      sets.push(
        sql.fragment`${sql.identifier([field])} = ${value === null ? null : String(value)}::numeric`,
      );
  }
  return db.one(sql.type(tierRow)`
    UPDATE runs.tiers SET ${sql.join(sets, sql.fragment`, `)} WHERE tier = ${tier.tier}
    RETURNING tier, metered, allowed_images, memory_limit_mb, cpu_cores, timeout_seconds, concurrent_runs,
              daily_runs, workflow_nodes, retention_days, metered_seconds_per_day`);
}

/** A live key (not revoked, not expired) on a metered tier, with that tier's daily cap. */
export const meteredKeyRow = z.object({
  tenantId: z.string(),
  keyId: z.string(),
  tier: z.string(),
  /** The tier's metered_seconds_per_day (bigint as a string); null: uncapped. */
  cap: z.string().nullable(),
});
export type MeteredKeyRow = z.infer<typeof meteredKeyRow>;

/** The live keys on metered tiers: all of them, or those of one tier, or one key. */
export async function listMeteredKeys(
  db: Queryable,
  filter: { tier?: string; keyId?: string } = {},
): Promise<readonly MeteredKeyRow[]> {
  const conditions = [
    sql.fragment`t.metered`,
    sql.fragment`k.revoked_at IS NULL`,
    sql.fragment`(k.expires_at IS NULL OR k.expires_at > now())`,
  ];
  if (filter.tier !== undefined) conditions.push(sql.fragment`t.tier = ${filter.tier}`);
  if (filter.keyId !== undefined) conditions.push(sql.fragment`k.key_id = ${filter.keyId}`);
  return db.any(sql.type(meteredKeyRow)`
    SELECT k.tenant_id AS "tenantId", k.key_id AS "keyId", t.tier,
           t.metered_seconds_per_day::text AS cap
    FROM runs.api_keys k JOIN runs.tiers t ON t.tier = k.tier
    WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY k.key_id`);
}

/** A metered tier with its daily cap (bigint as a string; null: uncapped). */
const meteredTierRow = z.object({ tier: z.string(), cap: z.string().nullable() });

/** The metered tiers, with their daily caps. */
export async function listMeteredTiers(
  db: Queryable,
): Promise<readonly z.infer<typeof meteredTierRow>[]> {
  return db.any(sql.type(meteredTierRow)`
    SELECT tier, metered_seconds_per_day::text AS cap FROM runs.tiers WHERE metered
    ORDER BY tier`);
}

export async function setKeyTier(
  db: Queryable,
  keyId: string,
  tier: string | null,
): Promise<boolean> {
  const result = await db.query(
    sql.unsafe`UPDATE runs.api_keys SET tier = ${tier} WHERE key_id = ${keyId}`,
  );
  return result.rowCount === 1;
}

/** A tenant's key as the operator CLI lists it. */
const keyListRow = z.object({
  key_id: z.string(),
  tenant_id: z.string(),
  tier: z.string().nullable(),
  label: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
  permissions: z.array(z.string()),
});

export async function listKeys(db: Queryable, tenantId: string) {
  return db.any(sql.type(keyListRow)`
    SELECT k.key_id, k.tenant_id, k.tier, k.label, k.created_at, k.expires_at, k.revoked_at,
           COALESCE((SELECT array_agg(p.permission ORDER BY p.permission)
                     FROM runs.api_key_permissions p WHERE p.key_id = k.key_id), '{}') AS permissions
    FROM runs.api_keys k WHERE k.tenant_id = ${tenantId} ORDER BY k.key_id`);
}

/** The tenant of a key, revoked or not; null when there is no such key. */
export async function findKeyTenant(
  db: Pick<DatabasePool, 'maybeOneFirst'>,
  keyId: string,
): Promise<string | null> {
  return db.maybeOneFirst(
    sql.type(keyTenantRow)`SELECT tenant_id FROM runs.api_keys WHERE key_id = ${keyId}`,
  );
}
