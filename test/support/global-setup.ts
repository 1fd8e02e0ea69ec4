import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { loadStackEnv, DATA_DIR, REPO_ROOT } from './stack-env';
import { loadConfig } from '../../api/platform/config';
import { createLogger } from '../../api/platform/logger';
import { migrateAll } from '../../db/migrate';

const WORKER_READY_TIMEOUT_MS = 180_000;

/**
 * Once per test run: migrate, then start one Temporal worker process on task queues of this
 * run's own (prefixed), so tests never race a worker that `scripts/start` left running.
 */
export default async function globalSetup(): Promise<void> {
  loadStackEnv();
  process.env.LOG_LEVEL ??= 'warn';
  const runId = `test-${process.pid}-${Date.now().toString(36)}`;
  process.env.TASK_QUEUE_PREFIX = `${runId}-`;
  process.env.WORKER_ID = runId;
  const config = loadConfig();
  await migrateAll(config.databaseUrl, createLogger('warn'));

  fs.mkdirSync(path.join(DATA_DIR, 'logs'), { recursive: true });
  const logFile = path.join(DATA_DIR, 'logs', `${runId}-worker.log`);
  const log = fs.openSync(logFile, 'w');
  const worker = spawn(path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx'), ['worker/main.ts'], {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', log],
  });
  const stdout = worker.stdout!;
  (globalThis as { __testWorker?: typeof worker }).__testWorker = worker;
  process.env.TEST_WORKER_PID = String(worker.pid);

  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`test worker not ready in time; see ${logFile}`)),
      WORKER_READY_TIMEOUT_MS,
    );
    worker.on('exit', (code) =>
      reject(new Error(`test worker exited with ${code}; see ${logFile}`)),
    );
    stdout.on('data', (chunk: Buffer) => {
      fs.appendFileSync(logFile, chunk);
      if (chunk.toString().includes('worker polling')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  worker.removeAllListeners('exit');
  stdout.on('data', (chunk: Buffer) => fs.appendFileSync(logFile, chunk));
}
