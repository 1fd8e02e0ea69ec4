import os from 'node:os';
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '../../platform/config';
import { createLogger } from '../../platform/logger';
import { createTemporalClient } from '../../platform/temporal';
import { createDatabasePool, type DatabasePool } from '../../db/pool';
import { createRedis, closeRedis, type Redis } from '../../db/redis';
import type { Principal } from './credentials';
import { insertNewKey, listOperatorKeys, revokeKey } from './keys';
import { OPERATOR_SCOPE_NAMES, isOperatorScope } from './scopes';
import { changeTenant, createBootstrapStarter, createTenant, listAllTenants } from './tenants';

/**
 * The operator CLI of the quota service (scripts/quota-admin): operator keys, and tenants with
 * their first key, through the same service logic as the API. `--json` prints one JSON object.
 */
export const USAGE = `usage: quota-admin <command> [options] [--json]
  operator-key create --actor A [--name N] [--scopes ${OPERATOR_SCOPE_NAMES.join(',')}]
  operator-key list
  operator-key revoke <key_row_id>             (401 on its next request)
  tenant create --name N [--admin-actor A]     (prints the tenant and its first key, once)
  tenant list
  tenant suspend <tenant_id>
  tenant activate <tenant_id>
  --actor A names the operator in the audit (default operator:<login>)`;

export class UsageError extends Error {}

const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  actor: { type: 'string' },
  name: { type: 'string' },
  scopes: { type: 'string' },
  'admin-actor': { type: 'string' },
} as const;

type Values = {
  [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string;
};

export interface AdminDeps {
  config: Config;
  pool: DatabasePool;
  redis: Redis;
}

/** Runs one command and returns what it prints. */
export async function runAdmin(
  argv: string[],
  deps: AdminDeps,
): Promise<{ json: unknown; text: string }> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: OPTIONS,
    allowPositionals: true,
  });
  const v = values as Values;
  const [noun, verb, ...rest] = positionals;
  if (v.help || !noun) throw new UsageError(USAGE);
  const operator: Principal = {
    keyRowId: 'cli',
    keyId: 'cli',
    tenantId: null,
    actor: v.actor ?? `operator:${os.userInfo().username}`,
    scopes: [...OPERATOR_SCOPE_NAMES],
    constraints: null,
  };
  switch (`${noun} ${verb ?? ''}`.trim()) {
    case 'operator-key create':
      return operatorKeyCreate(deps, v);
    case 'operator-key list': {
      const keys = await listOperatorKeys(deps);
      return {
        json: keys,
        text: keys.map((k) => `${k.id} ${k.status} ${k.actor} ${k.scopes.join(',')}`).join('\n'),
      };
    }
    case 'operator-key revoke': {
      const key = await revokeKey(deps, operator, one(rest, 'key_row_id'));
      return { json: key, text: `operator key ${key.id} ${key.status}` };
    }
    case 'tenant create':
      return tenantCreate(deps, operator, v);
    case 'tenant list': {
      const tenants = await listAllTenants(deps);
      return {
        json: tenants,
        text: tenants.map((t) => `${t.id} ${t.status} ${t.name}`).join('\n'),
      };
    }
    case 'tenant suspend':
    case 'tenant activate': {
      const status = verb === 'suspend' ? 'suspended' : 'active';
      const tenant = await changeTenant(deps, operator, one(rest), { status });
      return { json: tenant, text: `tenant ${tenant.id} ${tenant.status}` };
    }
    default:
      throw new UsageError(`unknown command "${positionals.join(' ')}"\n${USAGE}`);
  }
}

function one(rest: string[], what = 'tenant_id'): string {
  if (rest.length !== 1 || !rest[0]) throw new UsageError(`expected exactly one ${what}\n${USAGE}`);
  return rest[0];
}

async function operatorKeyCreate(deps: AdminDeps, v: Values) {
  if (!v.actor) throw new UsageError(`--actor is required\n${USAGE}`);
  const scopes = (v.scopes ?? OPERATOR_SCOPE_NAMES.join(',')).split(',').filter(Boolean);
  const unknown = scopes.filter((s) => !isOperatorScope(s));
  if (unknown.length > 0 || scopes.length === 0)
    throw new UsageError(`operator scopes are ${OPERATOR_SCOPE_NAMES.join(', ')}`);
  const key = await deps.pool.transaction((tx) =>
    insertNewKey(tx, {
      tenantId: null,
      name: v.name ?? 'operator',
      scopes,
      actor: v.actor!,
      constraints: null,
      issuerActor: v.actor!,
      grant: true,
    }),
  );
  return { json: key, text: `operator key ${key.id} (${scopes.join(',')}): ${key.key}` };
}

/** The tenant and its first key; its bootstrap workflow is started from here. */
async function tenantCreate(deps: AdminDeps, operator: Principal, v: Values) {
  if (!v.name) throw new UsageError(`--name is required\n${USAGE}`);
  const logger = createLogger('warn');
  const temporal = createTemporalClient(deps.config);
  const bootstraps = createBootstrapStarter({ ...deps, temporal, logger });
  try {
    const created = await createTenant({ ...deps, bootstraps }, operator, {
      name: v.name,
      ...(v['admin-actor'] ? { admin_actor: v['admin-actor'] } : {}),
    });
    return {
      json: created,
      text: `tenant ${created.id} created; first key ${created.admin_key.id}: ${created.admin_key.key}`,
    };
  } finally {
    await bootstraps.stop();
    await temporal.connection.close();
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const asJson = argv.includes('--json');
  const config = loadConfig();
  const pool = await createDatabasePool(config, {
    applicationName: 'quota-admin',
    maximumPoolSize: 2,
  });
  const redis = createRedis(config, 'quota:');
  try {
    const out = await runAdmin(argv, { config, pool, redis });
    console.log(asJson ? JSON.stringify(out.json) : out.text);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(asJson ? JSON.stringify({ error: message }) : message);
    process.exitCode =
      error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
        ? 2
        : 1;
  } finally {
    await pool.end();
    await closeRedis(redis);
  }
}

if (require.main === module) void main();
