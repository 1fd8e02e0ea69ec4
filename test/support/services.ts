import { loadConfig, type Config } from '../../platform/config';
import { createLogger } from '../../platform/logger';
import { bootService, type BootedService } from '../../api/platform/bootstrap';
import { SERVICES, type ServiceName } from '../../api/services';

export interface TestService extends BootedService {
  url: string;
}

/**
 * The services' background schedules stay off unless a test turns them on, because it exercises
 * them and deletes them after (ledger/holds, runs/probes): a schedule outlives the test's
 * service and would fire into the run's queues until the global teardown.
 */
const NO_SCHEDULES = {
  RUNS_RETENTION_SCHEDULE: 'false',
  LEDGER_HOLD_SWEEP_SCHEDULE: 'false',
  QUOTA_JOB_SCHEDULES: 'false',
};

/** Boots a real service in-process on a free port, against the running stack (or `overrides`). */
export async function startTestService(
  name: ServiceName,
  overrides: NodeJS.ProcessEnv = {},
): Promise<TestService> {
  const config: Config = loadConfig({ ...process.env, ...NO_SCHEDULES, ...overrides });
  const booted = await bootService(name, SERVICES[name], config, createLogger(config.logLevel), 0);
  return { ...booted, url: `http://127.0.0.1:${booted.port}` };
}

/** Polls `probe` until it returns a value, or throws after `timeoutMs`. */
export async function eventually<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
