import { v7 as uuidv7 } from 'uuid';
import { loadConfig } from '../platform/config';
import {
  noPositionals,
  notFound,
  positional,
  requiredOption,
  runMain,
  usageText,
  UsageError,
  type Cli,
  type Printed,
} from '../platform/cli';
import { createDatabasePool, type DatabasePool } from '../db/pool';
import { withSystem } from '../db/ledger/context';
import {
  findTenant,
  insertTenant,
  LEDGER_ROLES,
  revokeKey,
  updateTenant,
  type LedgerRole,
  type TenantKind,
} from '../db/ledger/tenants';
import { rebuildAsyncBalances } from '../db/ledger/accounts';
import {
  freezePosting,
  freezeScopeExists,
  listPostingFreezes,
  unfreezePosting,
} from '../db/ledger/freezes';
import { issueKey } from '../services/ledger/credentials';
import { meterNewTenant } from '../services/ledger/metering';

/**
 * The operator CLI of the ledger (scripts/ledger-admin; in the image
 * `node dist/cli/ledger.js`): tenants, their keys, posting freezes, the async balance
 * repair. The convention (help, exit codes, positional subject, --json) is platform/cli.ts's.
 */

const RETRY_AFTER_DEFAULT_SECONDS = 60;
const RETRY_AFTER_MAX_SECONDS = 86_400;
const REASON_LENGTH_MAX = 1024;

export const USAGE = usageText(
  'ledger-admin',
  `  tenant create --name NAME [--kind production|sandbox]
  tenant suspend <tenant_id>
  tenant activate <tenant_id>
  key create --tenant TENANT_ID --role ${LEDGER_ROLES.join('|')} [--ttl-days N] [--label LABEL]
  key revoke <key_id>
  posting freeze <tenant_id> [--asset-type ASSET_TYPE_ID] [--retry-after SECONDS] [--reason TEXT]
    refuse postings and commits of the tenant (and its sub-tenants), or of one of its asset types,
    with 409 POSTING_FROZEN and Retry-After (default ${RETRY_AFTER_DEFAULT_SECONDS} s); reads, voids and expiries go on
  posting unfreeze <tenant_id> [--asset-type ASSET_TYPE_ID]
  posting freezes [--tenant TENANT_ID]
  balances rebuild [--tenant TENANT_ID]
    recompute async accounts' balance rows from the journal (repair; sums the whole journal)
The secret of a new key is printed once; only its SHA-256 is stored.
Metering: a root tenant's calls are consumed in the quota service at QUOTA_URL (LEDGER_QUOTA_KEY,
made by scripts/platform-metering) as the subject ledger:<tenant_id> on the plan ledger-monthly,
put there by tenant create (or by the ledger before its first call is counted); the usage
summary shows them.`,
);

const COMMANDS = [
  'tenant create',
  'tenant suspend',
  'tenant activate',
  'key create',
  'key revoke',
  'posting freeze',
  'posting unfreeze',
  'posting freezes',
  'balances rebuild',
] as const;

const NAME_LENGTH_MAX = 255;
const TTL_DAYS_MAX = 3650;

const OPTIONS = {
  name: { type: 'string' },
  kind: { type: 'string' },
  tenant: { type: 'string' },
  role: { type: 'string' },
  'ttl-days': { type: 'string' },
  label: { type: 'string' },
  key: { type: 'string' },
  'asset-type': { type: 'string' },
  'retry-after': { type: 'string' },
  reason: { type: 'string' },
} as const;

type Options = Partial<Record<keyof typeof OPTIONS, string>> & { json?: boolean; help?: boolean };

const required = (options: Options, name: keyof typeof OPTIONS): string =>
  requiredOption(options, name);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
function uuid(value: string, what: string): string {
  if (!UUID.test(value)) throw new UsageError(`${what} must be a UUID`);
  return value.toLowerCase();
}

const uuidOption = (options: Options, name: 'tenant' | 'asset-type'): string =>
  uuid(required(options, name), `--${name}`);

const optionalUuid = (options: Options, name: 'tenant' | 'asset-type'): string | null =>
  options[name] === undefined ? null : uuidOption(options, name);

/**
 * The entity a command acts on, positional (`tenant suspend <tenant_id>`); the `--tenant` or
 * `--key` that named it before is still taken, so older scripts keep working.
 */
const subject = (args: string[], options: Options, name: 'tenant' | 'key'): string =>
  uuid(positional(args, `${name}_id`, options[name]), `${name}_id`);

function freezeScope(
  args: string[],
  options: Options,
): { tenantId: string; assetTypeId: string | null } {
  return {
    tenantId: subject(args, options, 'tenant'),
    assetTypeId: optionalUuid(options, 'asset-type'),
  };
}

const scopeText = (f: { tenant_id: string; asset_type_id: string | null }) =>
  f.asset_type_id === null
    ? `tenant ${f.tenant_id}`
    : `asset type ${f.asset_type_id} of tenant ${f.tenant_id}`;

/** An integer option from 1 to `max`; `fallback` when it is absent. */
function integerOption(
  options: Options,
  name: 'ttl-days' | 'retry-after',
  max: number,
  fallback: number | null,
): number | null {
  const text = options[name];
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1 || value > max)
    throw new UsageError(`--${name} must be an integer from 1 to ${max}`);
  return value;
}

/** An optional text option of 1 to `max` chars. */
function textOption(options: Options, name: 'label' | 'reason', max: number): string | null {
  const text = options[name];
  if (text === undefined) return null;
  if (text === '' || text.length > max) throw new UsageError(`--${name} must be 1 to ${max} chars`);
  return text;
}

/**
 * Runs one command; returns what to print (an object for --json, a line otherwise). `args`: the
 * positionals after the command (the entity it acts on).
 */
export async function runCommand(
  pool: DatabasePool,
  command: string,
  options: Options,
  args: string[] = [],
): Promise<Printed> {
  switch (command) {
    case 'tenant create':
      noPositionals(args);
      return tenantCreate(pool, options);
    case 'tenant suspend':
    case 'tenant activate':
      return tenantSetStatus(
        pool,
        subject(args, options, 'tenant'),
        command === 'tenant suspend' ? 'suspended' : 'active',
      );
    case 'key create':
      noPositionals(args);
      return keyCreate(pool, options);
    case 'key revoke':
      return keyRevoke(pool, subject(args, options, 'key'));
    case 'posting freeze':
      return postingFreeze(pool, freezeScope(args, options), options);
    case 'posting unfreeze':
      return postingUnfreeze(pool, freezeScope(args, options));
    case 'posting freezes':
      noPositionals(args);
      return postingFreezes(pool, optionalUuid(options, 'tenant'));
    case 'balances rebuild':
      noPositionals(args);
      return balancesRebuild(pool, optionalUuid(options, 'tenant'));
    default:
      throw new UsageError(command ? `unknown command: ${command}` : 'no command given');
  }
}

async function tenantCreate(pool: DatabasePool, options: Options): Promise<Printed> {
  const name = required(options, 'name');
  if (name.length > NAME_LENGTH_MAX)
    throw new UsageError(`--name is longer than ${NAME_LENGTH_MAX} chars`);
  const kind = (options.kind ?? 'production') as TenantKind;
  if (kind !== 'production' && kind !== 'sandbox')
    throw new UsageError('--kind must be production or sandbox');
  const tenant = await withSystem(pool, (tx) =>
    insertTenant(tx, { tenantId: uuidv7(), parentId: null, name, kind, contactEmail: null }),
  );
  const metering = await meteringOf(tenant.tenant_id);
  return {
    json: { ...tenant, metering },
    text: `tenant ${tenant.tenant_id} created (${tenant.name})\n${meteringNote(metering)}`,
  };
}

/** The new root tenant in the quota service (its calls' subject), as the configuration allows. */
async function meteringOf(tenantId: string) {
  const { ledger } = loadConfig();
  if (ledger.metering === null) return 'off' as const;
  return meterNewTenant(ledger.metering, ledger.monthlyCallQuota, tenantId);
}

function meteringNote(metering: Awaited<ReturnType<typeof meteringOf>>): string {
  if (metering === 'off')
    return 'metering is off (QUOTA_URL and LEDGER_QUOTA_KEY unset): no monthly call quota is kept';
  if (metering === 'unreachable')
    return 'the quota service did not answer: the tenant is put on its plan before its first call is counted';
  return `quota service: ${metering.subject} on the plan ledger-monthly`;
}

async function tenantSetStatus(
  pool: DatabasePool,
  tenantId: string,
  status: 'suspended' | 'active',
): Promise<Printed> {
  const tenant = await withSystem(pool, (tx) => updateTenant(tx, tenantId, { status }));
  if (!tenant) throw notFound(`tenant ${tenantId} not found`);
  return { json: tenant, text: `tenant ${tenant.tenant_id} ${tenant.status}` };
}

async function keyCreate(pool: DatabasePool, options: Options): Promise<Printed> {
  const tenantId = uuidOption(options, 'tenant');
  const role = required(options, 'role') as LedgerRole;
  if (!LEDGER_ROLES.includes(role))
    throw new UsageError(`--role must be one of ${LEDGER_ROLES.join(', ')}`);
  const ttlDays = integerOption(options, 'ttl-days', TTL_DAYS_MAX, null);
  const label = textOption(options, 'label', NAME_LENGTH_MAX);
  const key = await withSystem(pool, async (tx) => {
    if (!(await findTenant(tx, tenantId))) throw notFound(`tenant ${tenantId} not found`);
    return issueKey(tx, { tenantId, role, label, ttlDays });
  });
  return {
    json: key,
    text: `key ${key.key_id} (${key.role}) for tenant ${key.tenant_id}\nsecret (shown once): ${key.secret}`,
  };
}

async function keyRevoke(pool: DatabasePool, keyId: string): Promise<Printed> {
  // Whichever tenant's key (tenant null): the operator's revoke, in the system context.
  const key = await withSystem(pool, (tx) => revokeKey(tx, null, keyId));
  if (!key) throw notFound(`key ${keyId} not found`);
  return { json: key, text: `key ${keyId} revoked` };
}

type FreezeScope = ReturnType<typeof freezeScope>;

async function postingFreeze(
  pool: DatabasePool,
  scope: FreezeScope,
  options: Options,
): Promise<Printed> {
  const retryAfterSeconds = integerOption(
    options,
    'retry-after',
    RETRY_AFTER_MAX_SECONDS,
    RETRY_AFTER_DEFAULT_SECONDS,
  )!;
  const reason = textOption(options, 'reason', REASON_LENGTH_MAX);
  const freeze = await withSystem(pool, async (tx) => {
    if (!(await freezeScopeExists(tx, scope.tenantId, scope.assetTypeId)))
      throw notFound(
        `${scope.assetTypeId === null ? 'tenant' : 'asset type of that tenant'} not found`,
      );
    return freezePosting(tx, { ...scope, reason, retryAfterSeconds });
  });
  return {
    json: freeze,
    text: `posting frozen for ${scopeText(freeze)} (Retry-After ${freeze.retry_after_seconds} s)`,
  };
}

async function postingUnfreeze(pool: DatabasePool, scope: FreezeScope): Promise<Printed> {
  const lifted = await withSystem(pool, (tx) =>
    unfreezePosting(tx, scope.tenantId, scope.assetTypeId),
  );
  const described = scopeText({ tenant_id: scope.tenantId, asset_type_id: scope.assetTypeId });
  return {
    json: { unfrozen: lifted !== null, freeze: lifted },
    text: lifted ? `posting unfrozen for ${described}` : `no posting freeze on ${described}`,
  };
}

async function postingFreezes(pool: DatabasePool, tenantId: string | null): Promise<Printed> {
  const freezes = await withSystem(pool, (tx) => listPostingFreezes(tx, tenantId));
  const line = (f: (typeof freezes)[number]) =>
    `${scopeText(f)}: since ${f.frozen_at}, Retry-After ${f.retry_after_seconds} s${f.reason ? ` (${f.reason})` : ''}`;
  return {
    json: { freezes },
    text: freezes.length === 0 ? 'no posting freezes' : freezes.map(line).join('\n'),
  };
}

async function balancesRebuild(pool: DatabasePool, tenantId: string | null): Promise<Printed> {
  const result = await rebuildAsyncBalances(pool, tenantId);
  return {
    json: result,
    text: `async balances rebuilt from the journal: ${result.accounts} accounts, ${result.drifted} had drifted, ${result.dropped_deltas} queued deltas dropped`,
  };
}

const cli: Cli = {
  name: 'ledger-admin',
  usage: USAGE,
  options: OPTIONS,
  commands: COMMANDS,
  async run({ command, values, args }) {
    const pool = await createDatabasePool(loadConfig(), {
      applicationName: 'ledger-admin',
      maximumPoolSize: 1,
    });
    try {
      return await runCommand(pool, command, values, args);
    } finally {
      await pool.end();
    }
  },
};

if (require.main === module) runMain(cli);
