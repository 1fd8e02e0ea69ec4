import { parseArgs } from 'node:util';
import { v7 as uuidv7 } from 'uuid';
import { loadConfig } from '../platform/config';
import { createDatabasePool, sql, type DatabasePool } from '../../db/pool';
import { withSystem } from '../../db/ledger/context';
import {
  insertTenant,
  LEDGER_ROLES,
  updateTenant,
  type LedgerRole,
  type TenantKind,
} from '../../db/ledger/tenants';
import { rebuildAsyncBalances } from '../../db/ledger/accounts';
import { issueKey } from './credentials';

const USAGE = `usage: ledger-admin <command> [options]
  tenant create --name NAME [--kind production|sandbox] [--json]
  tenant suspend --tenant TENANT_ID [--json]
  tenant activate --tenant TENANT_ID [--json]
  key create --tenant TENANT_ID --role ${LEDGER_ROLES.join('|')} [--ttl-days N] [--label LABEL] [--json]
  key revoke --key KEY_ID [--json]
  balances rebuild [--tenant TENANT_ID] [--json]
    recompute async accounts' balance rows from the journal (repair; sums the whole journal)
The secret of a new key is printed once; only its SHA-256 is stored.`;

const NAME_LENGTH_MAX = 255;
const TTL_DAYS_MAX = 3650;

class UsageError extends Error {}

type Options = Partial<
  Record<'name' | 'kind' | 'tenant' | 'role' | 'ttl-days' | 'label' | 'key', string>
> & { json?: boolean; help?: boolean };

function parse(argv: string[]): { command: string; options: Options } {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      kind: { type: 'string' },
      tenant: { type: 'string' },
      role: { type: 'string' },
      'ttl-days': { type: 'string' },
      label: { type: 'string' },
      key: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  return { command: positionals.join(' '), options: values };
}

function required(options: Options, name: keyof Options): string {
  const value = options[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
function uuidOption(options: Options, name: 'tenant' | 'key'): string {
  const value = required(options, name);
  if (!UUID.test(value)) throw new UsageError(`--${name} must be a UUID`);
  return value.toLowerCase();
}

/** Runs one command; returns what to print (an object for --json, a line otherwise). */
export async function runCommand(
  pool: DatabasePool,
  command: string,
  options: Options,
): Promise<{ json: unknown; text: string }> {
  switch (command) {
    case 'tenant create': {
      const name = required(options, 'name');
      if (name.length > NAME_LENGTH_MAX)
        throw new UsageError(`--name is longer than ${NAME_LENGTH_MAX} chars`);
      const kind = (options.kind ?? 'production') as TenantKind;
      if (kind !== 'production' && kind !== 'sandbox')
        throw new UsageError('--kind must be production or sandbox');
      const tenant = await withSystem(pool, (tx) =>
        insertTenant(tx, { tenantId: uuidv7(), parentId: null, name, kind, contactEmail: null }),
      );
      return { json: tenant, text: `tenant ${tenant.tenant_id} created (${tenant.name})` };
    }
    case 'tenant suspend':
    case 'tenant activate': {
      const tenantId = uuidOption(options, 'tenant');
      const status = command === 'tenant suspend' ? 'suspended' : 'active';
      const tenant = await withSystem(pool, (tx) => updateTenant(tx, tenantId, { status }));
      if (!tenant) throw new UsageError(`tenant ${tenantId} not found`);
      return { json: tenant, text: `tenant ${tenant.tenant_id} ${tenant.status}` };
    }
    case 'key create': {
      const tenantId = uuidOption(options, 'tenant');
      const role = required(options, 'role') as LedgerRole;
      if (!LEDGER_ROLES.includes(role))
        throw new UsageError(`--role must be one of ${LEDGER_ROLES.join(', ')}`);
      const ttlText = options['ttl-days'];
      const ttlDays = ttlText === undefined ? null : Number(ttlText);
      if (
        ttlDays !== null &&
        (!Number.isInteger(ttlDays) || ttlDays < 1 || ttlDays > TTL_DAYS_MAX)
      ) {
        throw new UsageError(`--ttl-days must be an integer from 1 to ${TTL_DAYS_MAX}`);
      }
      const label = options.label ?? null;
      if (label !== null && label.length > NAME_LENGTH_MAX)
        throw new UsageError(`--label is longer than ${NAME_LENGTH_MAX} chars`);
      const key = await withSystem(pool, async (tx) => {
        const exists: unknown = await tx.maybeOne(
          sql.unsafe`SELECT 1 FROM ledger.tenants WHERE tenant_id = ${tenantId}`,
        );
        if (!exists) throw new UsageError(`tenant ${tenantId} not found`);
        return issueKey(tx, { tenantId, role, label, ttlDays });
      });
      return {
        json: key,
        text: `key ${key.key_id} (${key.role}) for tenant ${key.tenant_id}\nsecret (shown once): ${key.secret}`,
      };
    }
    case 'key revoke': {
      const keyId = uuidOption(options, 'key');
      const key: unknown = await withSystem(pool, (tx) =>
        tx.maybeOne(sql.unsafe`
          UPDATE ledger.api_keys SET revoked_at = coalesce(revoked_at, ledger.now_ms()) WHERE key_id = ${keyId}
          RETURNING key_id, tenant_id, role, label, created_at, expires_at, revoked_at`),
      );
      if (!key) throw new UsageError(`key ${keyId} not found`);
      return { json: key, text: `key ${keyId} revoked` };
    }
    case 'balances rebuild': {
      const tenantId = options.tenant === undefined ? null : uuidOption(options, 'tenant');
      const result = await rebuildAsyncBalances(pool, tenantId);
      return {
        json: result,
        text: `async balances rebuilt from the journal: ${result.accounts} accounts, ${result.drifted} had drifted, ${result.dropped_deltas} queued deltas dropped`,
      };
    }
    default:
      throw new UsageError(command ? `unknown command: ${command}` : 'no command given');
  }
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parse(argv);
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (parsed.options.help) {
    console.log(USAGE);
    return 0;
  }
  const pool = await createDatabasePool(loadConfig(), {
    applicationName: 'ledger-admin',
    maximumPoolSize: 1,
  });
  try {
    const { json, text } = await runCommand(pool, parsed.command, parsed.options);
    console.log(parsed.options.json ? JSON.stringify(json) : text);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`${error.message}\n${USAGE}`);
      return 2;
    }
    console.error(`ledger-admin failed: ${(error as Error).message}`);
    return 1;
  } finally {
    await pool.end();
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
