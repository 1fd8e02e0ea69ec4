import { runAdmin as quotaAdmin, type AdminDeps } from './quota';
import type { Config } from '../platform/config';
import { createDatabasePool } from '../db/pool';
import { closeRedis, createRedis } from '../db/redis';
import { RUNS_CATALOG_PREFIX, RUNS_SUBJECT_PREFIX } from '../services/runs/metering';
import { LEDGER_CATALOG_PREFIX, LEDGER_SUBJECT_PREFIX } from '../services/ledger/metering';

/**
 * What each service that meters through the quota service may do there with its key: its own
 * catalogue names and subjects only (the key's constraints), and the calls it makes.
 */
export const METERED_SERVICES = {
  runs: {
    env: 'RUNS_QUOTA_KEY',
    scopes: [
      'catalog:read',
      'catalog:write',
      'assignments:write',
      'consume',
      'check',
      'usage:read',
    ],
    subjectPrefix: RUNS_SUBJECT_PREFIX,
    catalogPrefix: RUNS_CATALOG_PREFIX,
  },
  ledger: {
    env: 'LEDGER_QUOTA_KEY',
    // consume also refunds: the calls a batch admitted past the month's limit are given back.
    scopes: ['catalog:read', 'catalog:write', 'assignments:write', 'consume'],
    subjectPrefix: LEDGER_SUBJECT_PREFIX,
    catalogPrefix: LEDGER_CATALOG_PREFIX,
  },
} as const;

/** The quota tenant the platform's own usage is kept in, unless told another. */
export const PLATFORM_QUOTA_TENANT = 'platform';

/**
 * The quota tenant named `tenantName` (made when missing) and a key of it for each metered
 * service, minted by the quota operator's CLI logic: what `scripts/platform-metering` prints as
 * environment lines, and what the test run sets up before its worker starts. Each call mints
 * new keys; the tenant is found by name.
 */
export async function mintMeteringKeys(
  deps: AdminDeps,
  tenantName = PLATFORM_QUOTA_TENANT,
): Promise<{ tenantId: string; env: Record<string, string> }> {
  const tenantId = await platformTenant(deps, tenantName);
  const env: Record<string, string> = {};
  for (const [service, key] of Object.entries(METERED_SERVICES)) {
    const { json } = await quotaAdmin(
      [
        'tenant-key',
        'create',
        '--tenant',
        tenantId,
        '--actor',
        `${service}-service`,
        '--name',
        `${service} metering`,
        '--scopes',
        key.scopes.join(','),
        '--subject-prefix',
        key.subjectPrefix,
        '--catalog-prefix',
        key.catalogPrefix,
      ],
      deps,
    );
    env[key.env] = (json as { key: string }).key;
  }
  return { tenantId, env };
}

/** What the quota operator's CLI logic needs, opened for `use` and closed after it. */
export async function withQuotaAdmin<T>(
  config: Config,
  use: (deps: AdminDeps) => Promise<T>,
): Promise<T> {
  const pool = await createDatabasePool(config, {
    applicationName: 'platform-metering',
    maximumPoolSize: 2,
  });
  const redis = createRedis(config, 'quota:');
  try {
    return await use({ config, pool, redis });
  } finally {
    await pool.end();
    await closeRedis(redis);
  }
}

async function platformTenant(deps: AdminDeps, name: string): Promise<string> {
  const listed = (await quotaAdmin(['tenant', 'list'], deps)).json as {
    tenants: { id: string; name: string; status: string }[];
  };
  const found = listed.tenants.find((t) => t.name === name && t.status === 'active');
  if (found) return found.id;
  const created = await quotaAdmin(
    ['tenant', 'create', '--name', name, '--actor', 'platform-metering'],
    deps,
  );
  return (created.json as { id: string }).id;
}
