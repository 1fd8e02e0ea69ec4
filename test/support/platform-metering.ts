import path from 'node:path';
import { ulid } from 'ulid';
import type { ChildProcess } from 'node:child_process';
import { loadConfig } from '../../platform/config';
import { mintMeteringKeys, withQuotaAdmin } from '../../cli/metering-keys';
import { runAdmin as quotaAdmin } from '../../cli/quota';
import { freePort, startApiProcess } from './api-process';
import { DATA_DIR } from './stack-env';
import { RUN_RETRY_DELAYS } from './services';

/** A root tenant's ledger calls this month, as the run's quota service counts them. */
export async function meteredLedgerCalls(tenantId: string): Promise<number> {
  const subject = encodeURIComponent(`ledger:${tenantId}`);
  const response = await fetch(`${process.env.QUOTA_URL}/v1/subjects/${subject}/usage`, {
    headers: { authorization: `Bearer ${process.env.TEST_QUOTA_READ_KEY}` },
  });
  const body = (await response.json()) as { usage: { resource: string; used: number }[] };
  return body.usage.find((u) => u.resource === 'ledger-calls')?.used ?? 0;
}

/**
 * The quota service the test run's other services meter through, as scripts/start wires them:
 * its own API process, a quota tenant of the run's and a key of it for each metered service.
 * Returns the process and the environment (QUOTA_URL, RUNS_QUOTA_KEY, LEDGER_QUOTA_KEY) that the worker and every
 * service a test boots inherit.
 */
export async function startPlatformQuota(
  runId: string,
): Promise<{ api: ChildProcess; env: Record<string, string> }> {
  const port = await freePort();
  const api = await startQuotaProcess(port, `${runId}-platform-quota`);
  const tenantName = `platform ${runId}`;
  const keys = await meteringKeys(tenantName, { reader: true });
  // PLATFORM_QUOTA_TENANT: the name the top README's metering walk-through finds the tenant by.
  return {
    api,
    env: { QUOTA_URL: `http://127.0.0.1:${port}`, PLATFORM_QUOTA_TENANT: tenantName, ...keys },
  };
}

/**
 * A quota API in a process of its own on `port` (its jobs' schedules off, the run's webhook
 * retry schedule), once it is ready; its output in .data/logs/<logName>.log.
 */
export function startQuotaProcess(port: number, logName: string): Promise<ChildProcess> {
  return startApiProcess({
    services: ['quota'],
    env: {
      QUOTA_PORT: String(port),
      QUOTA_JOB_SCHEDULES: 'false',
      LOG_LEVEL: 'warn',
      ...RUN_RETRY_DELAYS,
    },
    logFile: path.join(DATA_DIR, 'logs', `${logName}.log`),
    readyUrls: [`http://127.0.0.1:${port}/readyz`],
  });
}

/**
 * Keys of a quota tenant of its own (RUNS_QUOTA_KEY, LEDGER_QUOTA_KEY), for a test whose
 * service sets a limit of its own (a ledger's LEDGER_MONTHLY_CALL_QUOTA): its catalogue is apart
 * from the run's, so the limit is not another service's.
 */
export async function meteringKeys(
  tenantName = `own ${ulid()}`,
  options: { reader?: boolean } = {},
): Promise<Record<string, string>> {
  return withQuotaAdmin(loadConfig(), async (deps) => {
    const minted = await mintMeteringKeys(deps, tenantName);
    if (!options.reader) return minted.env;
    // Tests read what the services metered (every subject's usage and ledger) with this one.
    const reader = await quotaAdmin(
      [
        'tenant-key',
        'create',
        '--tenant',
        minted.tenantId,
        '--actor',
        'tests',
        '--scopes',
        'usage:read',
      ],
      deps,
    );
    return { ...minted.env, TEST_QUOTA_READ_KEY: (reader.json as { key: string }).key };
  });
}
