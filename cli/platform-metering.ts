import fs from 'node:fs';
import path from 'node:path';
import {
  noPositionals,
  requiredOption,
  runMain,
  usageText,
  type Cli,
  type OptionValues,
  type Printed,
} from '../platform/cli';
import { loadConfig } from '../platform/config';
import {
  METERED_SERVICES,
  mintMeteringKeys,
  PLATFORM_QUOTA_TENANT,
  withQuotaAdmin,
} from './metering-keys';

/**
 * scripts/platform-metering (in the image `node dist/cli/platform-metering.js`): wires the
 * platform's services to the quota service they meter through. Its output is environment lines
 * to keep and source (scripts/start keeps them in .data/platform-metering.env).
 */
const USAGE = usageText(
  'platform-metering',
  `  keys create [--tenant-name N] [--quota-url URL]
             the quota tenant N (default ${PLATFORM_QUOTA_TENANT}; made when missing) and a new key
             of it for each metered service, printed as QUOTA_URL=... RUNS_QUOTA_KEY=...
             (QUOTA_URL: --quota-url, else this machine's quota API at QUOTA_PORT)
  keys ensure --dir DIR [--tenant-name N]
             the same keys, made once for a deployment that mounts them: when DIR holds a
             file per key (RUNS_QUOTA_KEY, LEDGER_QUOTA_KEY), nothing; else new keys, each
             written to DIR/<NAME> (mode 0600), which the services read as <NAME>_FILE`,
);

const OPTIONS = {
  'tenant-name': { type: 'string' },
  'quota-url': { type: 'string' },
  dir: { type: 'string' },
} as const;

async function keysCreate(values: OptionValues): Promise<Printed> {
  const config = loadConfig();
  const minted = await withQuotaAdmin(config, (deps) =>
    mintMeteringKeys(deps, (values['tenant-name'] as string | undefined) ?? PLATFORM_QUOTA_TENANT),
  );
  const quotaUrl =
    (values['quota-url'] as string | undefined) ?? `http://127.0.0.1:${config.ports.quota}`;
  const env = { QUOTA_URL: quotaUrl, ...minted.env };
  return {
    json: { tenant_id: minted.tenantId, env },
    text: Object.entries(env)
      .map(([name, value]) => `${name}=${value}`)
      .join('\n'),
  };
}

const KEY_NAMES = Object.values(METERED_SERVICES).map((service) => service.env);

async function keysEnsure(values: OptionValues): Promise<Printed> {
  const dir = requiredOption(values, 'dir');
  const missing = KEY_NAMES.filter((name) => !fs.existsSync(path.join(dir, name)));
  if (missing.length === 0) return { json: { dir, made: [] }, text: `the keys in ${dir} are kept` };
  const minted = await withQuotaAdmin(loadConfig(), (deps) =>
    mintMeteringKeys(deps, (values['tenant-name'] as string | undefined) ?? PLATFORM_QUOTA_TENANT),
  );
  fs.mkdirSync(dir, { recursive: true });
  // Every key anew, so that the files never mix keys of two mintings; each written whole or not.
  for (const name of KEY_NAMES) {
    const file = path.join(dir, name);
    fs.writeFileSync(`${file}.tmp`, `${minted.env[name]}\n`, { mode: 0o600 });
    fs.renameSync(`${file}.tmp`, file);
  }
  return {
    json: { dir, made: KEY_NAMES, tenant_id: minted.tenantId },
    text: `made ${KEY_NAMES.join(', ')} in ${dir}`,
  };
}

const cli: Cli = {
  name: 'platform-metering',
  usage: USAGE,
  options: OPTIONS,
  commands: ['keys create', 'keys ensure'],
  async run({ command, args, values }) {
    noPositionals(args);
    return command === 'keys ensure' ? keysEnsure(values) : keysCreate(values);
  },
};

if (require.main === module) runMain(cli);
