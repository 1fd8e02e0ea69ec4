import { v4 as uuidv4 } from 'uuid';
import { loadConfig } from '../platform/config';
import {
  noPositionals,
  notFound,
  parseCommandLine,
  positional,
  requiredOption,
  runMain,
  usageText,
  UsageError,
  type Cli,
  type CommandLine,
  type OptionValues,
  type Printed,
} from '../platform/cli';
import { createDatabasePool, type DatabasePool } from '../db/pool';
import { insertAudit } from '../db/runs/audit';
import {
  TIER_LIMIT_FIELDS,
  findKeyTenant,
  insertKey,
  insertTenant,
  listKeys,
  revokeKey,
  setKeyTier,
  tenantExists,
  tierMetered,
  upsertTier,
  type TierLimitField,
} from '../db/runs/tenants';
import { isPermission, PERMISSIONS, type Permission } from '../db/runs/permissions';
import {
  createRunsMeteringIfOn,
  provisionMetering,
  type RunsMetering,
} from '../services/runs/metering';

/**
 * The operator CLI of the runs service (scripts/runs-admin; in the image
 * `node dist/cli/runs.js`): issues tenants, API keys with their permissions, and tiers.
 * Every change is written to the tenant's audit log as an operator action. The convention (help,
 * exit codes, positional subject, --json) is platform/cli.ts's.
 */
export const USAGE = usageText(
  'runs-admin',
  `  tenant create <tenant_id> [--name NAME]
  key create --tenant T --permissions svc_run_submit,svc_run_read,... [--tier TIER] [--label L] [--expires-at ISO]
  key revoke <key_id>
  key list --tenant T
  key set-tier <key_id> --tier TIER|none
  tier set <tier> [--metered true|false] [--allowed-images ref,prefix/,...|any]
       [--memory-limit-mb N] [--cpu-cores N] [--timeout-seconds N] [--concurrent-runs N]
       [--daily-runs N] [--workflow-nodes N] [--retention-days N] [--metered-seconds-per-day N]
       (a limit given as "none" is removed)
  metering sync      (every metered tier's plan and key's subject in the quota service)
metering: a metered tier is a plan of the quota service at QUOTA_URL (one daily policy of
  runs-seconds, its cap metered_seconds_per_day), each of its keys a subject runs:<tenant>:<key>
  on it, made with RUNS_QUOTA_KEY by tier set, key create and key set-tier; without them
  metering is off and these commands say so
permissions: ${PERMISSIONS.join(', ')}`,
);

const COMMANDS = [
  'tenant create',
  'key create',
  'key revoke',
  'key list',
  'key set-tier',
  'tier set',
  'metering sync',
] as const;

const OPTIONS = {
  name: { type: 'string' },
  tenant: { type: 'string' },
  permissions: { type: 'string' },
  tier: { type: 'string' },
  label: { type: 'string' },
  'expires-at': { type: 'string' },
  metered: { type: 'string' },
  'allowed-images': { type: 'string' },
  ...Object.fromEntries(TIER_LIMIT_FIELDS.map((f) => [f.replace(/_/g, '-'), { type: 'string' }])),
} as const;

type Values = OptionValues;

/**
 * Runs one CLI command (argv without the program) against the pool and returns what it prints;
 * metering as the environment configures it unless given.
 */
export async function runAdmin(
  argv: string[],
  pool: DatabasePool,
  metering: RunsMetering | null = createRunsMeteringIfOn(loadConfig().runs.metering),
): Promise<Printed> {
  return runLine(parseCommandLine(argv, OPTIONS), { pool, metering });
}

interface AdminDeps {
  pool: DatabasePool;
  metering: RunsMetering | null;
}

async function runLine({ command, args, values: v }: CommandLine, deps: AdminDeps) {
  const { pool } = deps;
  switch (command) {
    case 'tenant create':
      return tenantCreate(pool, positional(args, 'tenant_id'), v);
    case 'key create':
      noPositionals(args);
      return withMetering(deps, await keyCreate(pool, v));
    case 'key revoke':
      return keyRevoke(pool, positional(args, 'key_id'));
    case 'key list':
      noPositionals(args);
      return keyList(pool, requiredOption(v, 'tenant'));
    case 'key set-tier':
      return withMetering(
        deps,
        await keySetTier(pool, positional(args, 'key_id'), requiredOption(v, 'tier')),
      );
    case 'tier set':
      return withMetering(deps, await tierSet(pool, positional(args, 'tier'), v));
    case 'metering sync':
      noPositionals(args);
      return withMetering(deps, { json: {}, text: '', metered: {} });
    default:
      throw new UsageError(command ? `unknown command: ${command}` : 'no command given');
  }
}

/**
 * A change's output, after the quota service was brought in line with what it touched
 * (`metered`: a tier or a key; empty: everything). Off, or nothing metered: said, not done.
 */
async function withMetering(
  deps: AdminDeps,
  done: Printed & { metered: { tier?: string; keyId?: string } | null },
): Promise<Printed> {
  const { metered, ...printed } = done;
  if (metered === null) return printed;
  if (deps.metering === null) {
    const note =
      'metering is off (QUOTA_URL and RUNS_QUOTA_KEY unset): metered keys are not charged';
    return {
      json: { ...(printed.json as object), metering: 'off' },
      text: `${printed.text}\n${note}`.trim(),
    };
  }
  const provisioned = await provisionMetering(deps.pool, deps.metering, metered);
  const text = `quota service: plans of ${provisioned.tiers.join(', ') || 'no tier'}, ${provisioned.keys} key(s) assigned`;
  return {
    json: { ...(printed.json as object), metering: provisioned },
    text: `${printed.text}\n${text}`.trim(),
  };
}

async function tenantCreate(pool: DatabasePool, tenantId: string, v: Values) {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(tenantId))
    throw new UsageError('tenant_id must match ^[A-Za-z0-9._-]{1,64}$');
  const created = await insertTenant(pool, tenantId, (v.name as string | undefined) ?? null);
  if (created)
    await insertAudit(pool, {
      tenantId,
      actor: 'operator',
      action: 'tenant.create',
      outcome: 'ok',
      target: tenantId,
    });
  return {
    json: { tenant_id: tenantId, created },
    text: created ? `tenant ${tenantId} created` : `tenant ${tenantId} already exists`,
  };
}

function parsePermissions(list: string): Permission[] {
  const names = [
    ...new Set(
      list
        .split(',')
        .map((p) => p.trim())
        .filter((p) => p !== ''),
    ),
  ];
  const unknown = names.filter((p) => !isPermission(p));
  if (unknown.length > 0)
    throw new UsageError(
      `unknown permission(s): ${unknown.join(', ')}; known: ${PERMISSIONS.join(', ')}`,
    );
  if (names.length === 0) throw new UsageError('--permissions names at least one permission');
  return names as Permission[];
}

async function keyCreate(pool: DatabasePool, v: Values) {
  const tenantId = requiredOption(v, 'tenant');
  const permissions = parsePermissions(requiredOption(v, 'permissions'));
  const tier = (v.tier as string | undefined) ?? null;
  const expiresAt = (v['expires-at'] as string | undefined) ?? null;
  if (expiresAt !== null && Number.isNaN(Date.parse(expiresAt)))
    throw new UsageError('--expires-at must be an ISO-8601 instant');
  if (!(await tenantExists(pool, tenantId)))
    throw notFound(`no tenant ${tenantId}; create it first`);
  const metered = tier === null ? false : await tierMetered(pool, tier);
  if (metered === null) throw notFound(`no tier ${tier}; create it with "tier set"`);
  const key = uuidv4();
  const keyId = await insertKey(pool, {
    key,
    tenantId,
    permissions,
    tier,
    label: (v.label as string | undefined) ?? null,
    expiresAt,
  });
  await insertAudit(pool, {
    tenantId,
    actor: 'operator',
    action: 'key.create',
    outcome: 'ok',
    target: keyId,
    detail: { permissions, tier },
  });
  return {
    json: { key, key_id: keyId, tenant_id: tenantId, permissions, tier, expires_at: expiresAt },
    text: `key ${keyId} for ${tenantId} (shown once): ${key}`,
    metered: metered ? { keyId } : null,
  };
}

async function keyRevoke(pool: DatabasePool, keyId: string) {
  const tenantId = await revokeKey(pool, keyId);
  if (tenantId === null) throw notFound(`no live key ${keyId}`);
  await insertAudit(pool, {
    tenantId,
    actor: 'operator',
    action: 'key.revoke',
    outcome: 'ok',
    target: keyId,
  });
  return {
    json: { key_id: keyId, tenant_id: tenantId, revoked: true },
    text: `key ${keyId} revoked`,
  };
}

async function keyList(pool: DatabasePool, tenantId: string) {
  const keys = await listKeys(pool, tenantId);
  return { json: { keys }, text: keys.map((k) => JSON.stringify(k)).join('\n') || '(no keys)' };
}

async function keySetTier(pool: DatabasePool, keyId: string, tierArg: string) {
  const tier = tierArg === 'none' ? null : tierArg;
  const metered = tier === null ? false : await tierMetered(pool, tier);
  if (metered === null) throw notFound(`no tier ${tier}`);
  const tenantId = (await findKeyTenant(pool, keyId)) ?? '';
  if (!(await setKeyTier(pool, keyId, tier))) throw notFound(`no key ${keyId}`);
  await insertAudit(pool, {
    tenantId,
    actor: 'operator',
    action: 'key.set_tier',
    outcome: 'ok',
    target: keyId,
    detail: { tier },
  });
  return {
    json: { key_id: keyId, tier },
    text: `key ${keyId} tier ${tier ?? 'none'}`,
    metered: metered ? { keyId } : null,
  };
}

function parseLimit(field: TierLimitField, raw: string): string | null {
  if (raw === 'none') return null;
  const ok =
    field === 'cpu_cores'
      ? /^\d+(\.\d{1,3})?$/.test(raw) && Number(raw) > 0
      : /^[1-9]\d{0,9}$/.test(raw);
  if (!ok)
    throw new UsageError(
      `--${field.replace(/_/g, '-')} must be a positive ${field === 'cpu_cores' ? 'number' : 'integer'} or "none"`,
    );
  return raw;
}

async function tierSet(pool: DatabasePool, tier: string, v: Values) {
  if (!/^[a-z][a-z0-9_-]{0,31}$/.test(tier))
    throw new UsageError('tier must match ^[a-z][a-z0-9_-]{0,31}$');
  const limits: Partial<Record<TierLimitField, string | null>> = {};
  for (const field of TIER_LIMIT_FIELDS) {
    const raw = v[field.replace(/_/g, '-')];
    if (typeof raw === 'string') limits[field] = parseLimit(field, raw);
  }
  let metered: boolean | undefined;
  if (v.metered !== undefined) {
    if (v.metered !== 'true' && v.metered !== 'false')
      throw new UsageError('--metered must be true or false');
    metered = v.metered === 'true';
  }
  const images = v['allowed-images'] as string | undefined;
  const allowedImages =
    images === undefined
      ? undefined
      : images === 'any'
        ? null
        : images
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean);
  const row = await upsertTier(pool, { tier, metered, allowedImages, limits });
  return {
    json: row,
    text: `tier ${tier}: ${JSON.stringify(row)}`,
    metered: row.metered ? { tier } : null,
  };
}

const cli: Cli = {
  name: 'runs-admin',
  usage: USAGE,
  options: OPTIONS,
  commands: COMMANDS,
  async run(line) {
    const config = loadConfig();
    const pool = await createDatabasePool(config, {
      applicationName: 'runs-admin',
      maximumPoolSize: 2,
    });
    try {
      const metering = createRunsMeteringIfOn(config.runs.metering);
      return await runLine(line, { pool, metering });
    } finally {
      await pool.end();
    }
  },
};

if (require.main === module) runMain(cli);
