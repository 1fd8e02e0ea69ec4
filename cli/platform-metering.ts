import {
  noPositionals,
  runMain,
  usageText,
  type Cli,
  type OptionValues,
  type Printed,
} from '../platform/cli';
import { loadConfig } from '../platform/config';
import { mintMeteringKeys, PLATFORM_QUOTA_TENANT, withQuotaAdmin } from './metering-keys';

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
             (QUOTA_URL: --quota-url, else this machine's quota API at QUOTA_PORT)`,
);

const OPTIONS = {
  'tenant-name': { type: 'string' },
  'quota-url': { type: 'string' },
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

const cli: Cli = {
  name: 'platform-metering',
  usage: USAGE,
  options: OPTIONS,
  commands: ['keys create'],
  async run({ args, values }) {
    noPositionals(args);
    return keysCreate(values);
  },
};

if (require.main === module) runMain(cli);
