import { loadConfig, type Config } from '../../platform/config';
import { createLogger } from '../../platform/logger';
import { bootService, type BootedService } from '../../api/bootstrap';
import { SERVICES, type ServiceName } from '../../api/services';

export interface TestService extends BootedService {
  url: string;
}

/**
 * The services' background schedules stay off unless a test turns them on, because it exercises
 * them and deletes them after (ledger/holds, runs/probes): a schedule outlives the test's
 * service and would fire into the run's queues until the global teardown. So does the ledger's
 * replay of unmetered calls: any process would replay every tenant's, into its own quota tenant.
 */
const NO_SCHEDULES = {
  RUNS_RETENTION_SCHEDULE: 'false',
  LEDGER_HOLD_SWEEP_SCHEDULE: 'false',
  QUOTA_JOB_SCHEDULES: 'false',
  LEDGER_UNMETERED_REPLAY: 'false',
};

/**
 * One retry schedule for every quota service of a test run (four waits of a second), those in
 * their own processes too: any of them may start a pending alert notice (the outbox sweepers
 * share the run's task queues), and a delivery waits by the schedule of the process that
 * started it.
 */
export const RUN_RETRY_DELAYS = { WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1,1' };

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
