import os from 'node:os';
import {
  noPositionals,
  parseCommandLine,
  positional,
  runMain,
  usageText,
  UsageError,
  type Cli,
  type CommandLine,
  type Printed,
} from '../platform/cli';
import { loadConfig, type Config } from '../platform/config';
import { createLogger } from '../platform/logger';
import { createTemporalClient } from '../platform/temporal';
import { createDatabasePool, type DatabasePool } from '../db/pool';
import { createRedis, closeRedis, type Redis } from '../db/redis';
import type { Principal } from '../services/quota/credentials';
import { prefix } from '../services/quota/schemas';
import { insertNewKey, listOperatorKeys, mintKey, revokeKey } from '../services/quota/keys';
import {
  OPERATOR_SCOPE_NAMES,
  TENANT_SCOPE_NAMES,
  isOperatorScope,
  isTenantScope,
} from '../services/quota/scopes';
import {
  changeTenant,
  createBootstrapStarter,
  createTenant,
  getTenant,
  listAllTenants,
} from '../services/quota/tenants';

/**
 * The operator CLI of the quota service (scripts/quota-admin; in the image
 * `node dist/cli/quota.js`): operator keys, and tenants with their first key, through the
 * same service logic as the API. The convention (help, exit codes, positional subject, --json)
 * is platform/cli.ts's; a refusal of the service logic is its own code (`tenant_not_found`).
 */
export const USAGE = usageText(
  'quota-admin',
  `  operator-key create --actor A [--name N] [--scopes ${OPERATOR_SCOPE_NAMES.join(',')}]
  operator-key list
  operator-key revoke <key_row_id>             (401 on its next request)
  tenant create --name N [--admin-actor A]     (prints the tenant and its first key, once)
  tenant list
  tenant suspend <tenant_id>
  tenant activate <tenant_id>
  tenant-key create --tenant T --actor A --scopes S,... [--name N] [--subject-prefix P]
             [--catalog-prefix P]              (a key of a tenant, its grants written at once:
                                                the platform's services meter with one)
  --actor A names the operator in the audit (default operator:<login>)`,
);

const COMMANDS = [
  'operator-key create',
  'operator-key list',
  'operator-key revoke',
  'tenant create',
  'tenant list',
  'tenant suspend',
  'tenant activate',
  'tenant-key create',
] as const;

const OPTIONS = {
  actor: { type: 'string' },
  name: { type: 'string' },
  scopes: { type: 'string' },
  'admin-actor': { type: 'string' },
  tenant: { type: 'string' },
  'subject-prefix': { type: 'string' },
  'catalog-prefix': { type: 'string' },
} as const;

type Values = {
  [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string;
};

export interface AdminDeps {
  config: Config;
  pool: DatabasePool;
  redis: Redis;
}

/** Runs one command (argv without the program) and returns what it prints. */
export async function runAdmin(argv: string[], deps: AdminDeps): Promise<Printed> {
  return runLine(parseCommandLine(argv, OPTIONS), deps);
}

async function runLine(line: CommandLine, deps: AdminDeps): Promise<Printed> {
  const { command, args } = line;
  const v = line.values as Values;
  const operator: Principal = {
    keyRowId: 'cli',
    keyId: 'cli',
    tenantId: null,
    actor: v.actor ?? `operator:${os.userInfo().username}`,
    scopes: [...OPERATOR_SCOPE_NAMES],
    constraints: null,
  };
  switch (command) {
    case 'operator-key create':
      noPositionals(args);
      return operatorKeyCreate(deps, v);
    case 'operator-key list': {
      noPositionals(args);
      const keys = await listOperatorKeys(deps);
      return {
        json: { keys },
        text: keys.map((k) => `${k.id} ${k.status} ${k.actor} ${k.scopes.join(',')}`).join('\n'),
      };
    }
    case 'operator-key revoke': {
      const key = await revokeKey(deps, operator, positional(args, 'key_row_id'));
      return { json: key, text: `operator key ${key.id} ${key.status}` };
    }
    case 'tenant create':
      noPositionals(args);
      return tenantCreate(deps, operator, v);
    case 'tenant list': {
      noPositionals(args);
      const tenants = await listAllTenants(deps);
      return {
        json: { tenants },
        text: tenants.map((t) => `${t.id} ${t.status} ${t.name}`).join('\n'),
      };
    }
    case 'tenant suspend':
    case 'tenant activate': {
      const status = command === 'tenant suspend' ? 'suspended' : 'active';
      const tenant = await changeTenant(deps, operator, positional(args, 'tenant_id'), { status });
      return { json: tenant, text: `tenant ${tenant.id} ${tenant.status}` };
    }
    case 'tenant-key create':
      noPositionals(args);
      return tenantKeyCreate(deps, operator, v);
    default:
      throw new UsageError(command ? `unknown command: ${command}` : 'no command given');
  }
}

async function operatorKeyCreate(deps: AdminDeps, v: Values) {
  if (!v.actor) throw new UsageError('--actor is required');
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

/**
 * A key of a tenant, minted by the operator as the tenant's own keys mint one (audit, grants
 * written in the same transaction): what another service of the platform meters with, usable at
 * once, before the tenant's bootstrap has written its first key's grants.
 */
async function tenantKeyCreate(deps: AdminDeps, operator: Principal, v: Values) {
  if (!v.tenant) throw new UsageError('--tenant is required');
  if (!v.actor) throw new UsageError('--actor is required');
  const scopes = (v.scopes ?? '').split(',').filter(Boolean);
  const unknown = scopes.filter((s) => !isTenantScope(s));
  if (unknown.length > 0 || scopes.length === 0)
    throw new UsageError(`--scopes names tenant scopes: ${TENANT_SCOPE_NAMES.join(', ')}`);
  await getTenant(deps, v.tenant);
  const constraints = {
    plan_ids: null,
    subject_prefix: validPrefix('--subject-prefix', v['subject-prefix']),
    catalog_name_prefix: validPrefix('--catalog-prefix', v['catalog-prefix']),
  };
  const tenantAdmin = { ...operator, tenantId: v.tenant, scopes: [...TENANT_SCOPE_NAMES] };
  const key = await mintKey(deps, tenantAdmin, {
    name: v.name ?? 'service',
    scopes,
    actor: v.actor,
    constraints:
      constraints.subject_prefix === null && constraints.catalog_name_prefix === null
        ? null
        : constraints,
  });
  return {
    json: key,
    text: `key ${key.id} of tenant ${v.tenant} (${scopes.join(',')}): ${key.key}`,
  };
}

/** A key constraint's prefix as the API takes it (schemas.ts), or null when not given. */
function validPrefix(option: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  const problem = prefix().validate(value).error;
  if (problem) throw new UsageError(`${option}: ${problem.message.replace(/^"value" /, '')}`);
  return value;
}

/** The tenant and its first key; its bootstrap workflow is started from here. */
async function tenantCreate(deps: AdminDeps, operator: Principal, v: Values) {
  if (!v.name) throw new UsageError('--name is required');
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

const cli: Cli = {
  name: 'quota-admin',
  usage: USAGE,
  options: OPTIONS,
  commands: COMMANDS,
  async run(line) {
    const config = loadConfig();
    const pool = await createDatabasePool(config, {
      applicationName: 'quota-admin',
      maximumPoolSize: 2,
    });
    const redis = createRedis(config, 'quota:');
    try {
      return await runLine(line, { config, pool, redis });
    } finally {
      await pool.end();
      await closeRedis(redis);
    }
  },
};

if (require.main === module) runMain(cli);
