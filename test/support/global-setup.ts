import path from 'node:path';
import { loadStackEnv, DATA_DIR } from './stack-env';
import { startWorkerProcess } from './worker-process';
import { loadConfig } from '../../api/platform/config';
import { createLogger } from '../../api/platform/logger';
import { migrateAll } from '../../db/migrate';
import { DEFAULT_TEST_NAMESPACE } from './test-namespace';

/**
 * Once per test run: migrate, then start one Temporal worker process on task queues of this
 * run's own (prefixed), so tests never race a worker that `scripts/start` left running. Every
 * execution goes to the tests' own namespace, never the operator's, and is emptied after.
 */
export default async function globalSetup(): Promise<void> {
  loadStackEnv();
  process.env.TEMPORAL_NAMESPACE = process.env.TEMPORAL_TEST_NAMESPACE ?? DEFAULT_TEST_NAMESPACE;
  process.env.LOG_LEVEL ??= 'warn';
  const runId = `test-${process.pid}-${Date.now().toString(36)}`;
  process.env.TASK_QUEUE_PREFIX = `${runId}-`;
  process.env.WORKER_ID = runId;
  const config = loadConfig();
  await migrateAll(config.databaseUrl, createLogger('warn'));

  const logFile = path.join(DATA_DIR, 'logs', `${runId}-worker.log`);
  const worker = await startWorkerProcess({}, logFile);
  (globalThis as { __testWorker?: typeof worker }).__testWorker = worker;
}
