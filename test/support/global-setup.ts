import path from 'node:path';
import { loadStackEnv, DATA_DIR } from './stack-env';
import { startWorkerProcess } from './worker-process';
import { loadConfig } from '../../platform/config';
import { createLogger } from '../../platform/logger';
import { migrateAll } from '../../db/migrate';
import { testNamespace, testRunPrefix } from './test-namespace';
import { ensureWebhookTestCertificates, webhookTestEnv } from './webhook-test-env';
import { startPlatformQuota } from './platform-metering';
import type { ChildProcess } from 'node:child_process';

/**
 * Once per test run: migrate, then start one Temporal worker process on task queues of this
 * run's own (prefixed), so tests never race a worker that `scripts/start` left running. Every
 * execution goes to the tests' own namespace, never the operator's; the teardown ends what this
 * run (by its prefix) left there.
 */
export default async function globalSetup(): Promise<void> {
  loadStackEnv();
  useTestNamespace();
  process.env.LOG_LEVEL ??= 'warn';
  const prefix = testRunPrefix();
  const runId = prefix.slice(0, -1);
  process.env.TASK_QUEUE_PREFIX = prefix;
  process.env.WORKER_ID = runId;
  const config = loadConfig();
  await migrateAll(config.databaseUrl, createLogger('warn'));
  await trustWebhookTestReceivers();
  await meterThroughQuota(runId);

  const logFile = path.join(DATA_DIR, 'logs', `${runId}-worker.log`);
  const worker = await startWorkerProcess({}, logFile);
  (globalThis as { __testWorker?: typeof worker }).__testWorker = worker;
}

/**
 * The services meter through a quota service of the run's own, as scripts/start wires them: its
 * settings are set before the worker starts, which inherits them, as every test file does.
 */
async function meterThroughQuota(runId: string): Promise<void> {
  const { api, env } = await startPlatformQuota(runId);
  (globalThis as { __platformQuota?: ChildProcess }).__platformQuota = api;
  Object.assign(process.env, env);
}

/** The namespace `scripts/start` and operators use; never the tests'. */
const OPERATORS_NAMESPACE = 'default';

/** Points every client and worker of the run (test files inherit this env) at the tests' namespace. */
function useTestNamespace(): void {
  if (testNamespace() === OPERATORS_NAMESPACE)
    throw new Error(
      `TEMPORAL_TEST_NAMESPACE is the operators' ${OPERATORS_NAMESPACE}: tests need their own`,
    );
  process.env.TEMPORAL_NAMESPACE = testNamespace();
}

/**
 * Deliveries from the worker (and from services tests boot in-process) reach the tests' HTTPS
 * receivers through configuration only, as an operator's local receiver would: the test CA is
 * trusted and loopback allowed. Set before the worker starts, which inherits it; test files see
 * it too, their environment being copied from this process's.
 */
async function trustWebhookTestReceivers(): Promise<void> {
  await ensureWebhookTestCertificates();
  Object.assign(process.env, webhookTestEnv());
}
