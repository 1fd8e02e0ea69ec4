import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { loadConfig } from '../../platform/config';
import { createDatabasePool } from '../../db/pool';
import { closeRedis, createRedis } from '../../db/redis';
import { mintMeteringKeys } from '../../api/platform/metering-keys';
import { freePort, startApiProcess } from './api-process';
import { DATA_DIR } from './stack-env';

/**
 * The quota service the test run's other services meter through, as scripts/start wires them:
 * its own API process, a quota tenant of the run's and a key of it for each metered service.
 * Returns the process and the environment (QUOTA_URL, RUNS_QUOTA_KEY) that the worker and every
 * service a test boots inherit.
 */
export async function startPlatformQuota(
  runId: string,
): Promise<{ api: ChildProcess; env: Record<string, string> }> {
  const port = await freePort();
  const quotaUrl = `http://127.0.0.1:${port}`;
  const api = await startApiProcess({
    services: ['quota'],
    env: { QUOTA_PORT: String(port), QUOTA_JOB_SCHEDULES: 'false', LOG_LEVEL: 'warn' },
    logFile: path.join(DATA_DIR, 'logs', `${runId}-platform-quota.log`),
    readyUrls: [`${quotaUrl}/readyz`],
  });
  const config = loadConfig();
  const pool = await createDatabasePool(config, {
    applicationName: 'platform-metering',
    maximumPoolSize: 2,
  });
  const redis = createRedis(config, 'quota:');
  try {
    const { env } = await mintMeteringKeys({ config, pool, redis }, `platform ${runId}`);
    return { api, env: { QUOTA_URL: quotaUrl, ...env } };
  } finally {
    await pool.end();
    await closeRedis(redis);
  }
}
