import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './stack-env';

export const WORKER_READY_TIMEOUT_MS = 180_000;

/**
 * Starts a real worker process (`tsx worker/main.ts`) with `env` over the current environment
 * and resolves once it polls its task queues. Its stdout and stderr go to `logFile`.
 * `detached` puts it in its own process group, so a test can kill -9 all of it at once.
 */
export function startWorkerProcess(
  env: NodeJS.ProcessEnv,
  logFile: string,
  options: { detached?: boolean } = {},
): Promise<ChildProcess> {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const log = fs.openSync(logFile, 'a');
  const worker = spawn(path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx'), ['worker/main.ts'], {
    cwd: REPO_ROOT,
    // Metrics on a free port: many workers share this machine (WORKER_METRICS_PORT's default is one).
    env: { ...process.env, WORKER_METRICS_PORT: '0', ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', log],
    detached: options.detached ?? false,
  });
  return new Promise((resolve, reject) => {
    const failed = (code: number | null) =>
      reject(new Error(`worker exited with ${code}; see ${logFile}`));
    const timer = setTimeout(
      () => reject(new Error(`worker not ready; see ${logFile}`)),
      WORKER_READY_TIMEOUT_MS,
    );
    worker.on('exit', failed);
    worker.stdout!.on('data', (chunk: Buffer) => {
      fs.appendFileSync(logFile, chunk);
      if (chunk.toString().includes('worker polling')) {
        clearTimeout(timer);
        worker.off('exit', failed);
        resolve(worker);
      }
    });
  });
}
