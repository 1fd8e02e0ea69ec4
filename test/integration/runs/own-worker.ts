import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ulid } from 'ulid';
import { DATA_DIR } from '../../support/stack-env';
import { WORKER_READY_TIMEOUT_MS, startWorkerProcess } from '../../support/worker-process';
import { config, startHarness, type Harness } from './support';

export { WORKER_READY_TIMEOUT_MS };

/** Kills the worker's whole process group with SIGKILL and waits for it to be gone. */
export function killHard(worker: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    worker.once('exit', () => resolve());
    process.kill(-worker.pid!, 'SIGKILL');
  });
}

/**
 * A worker process of a test's own and a service on its task queues, for a test that kills the
 * worker: `restart()` kills it hard and starts another with the same id. Its queues are under
 * the run's prefix, so the global teardown knows what it left as this run's.
 */
export function ownWorker(name: string, extraEnv: NodeJS.ProcessEnv = {}) {
  const id = `${name}-${ulid().toLowerCase().slice(-10)}`;
  const env = {
    ...extraEnv,
    TASK_QUEUE_PREFIX: `${config.taskQueuePrefix}${id}-`,
    WORKER_ID: id,
  };
  const logFile = path.join(DATA_DIR, 'logs', `${id}-worker.log`);
  let worker: ChildProcess | undefined;
  let harness: Harness | undefined;
  const start = async () => {
    worker = await startWorkerProcess(env, logFile, { detached: true });
  };
  return {
    id,
    /** The prefix of this worker's task queues. */
    queuePrefix: env.TASK_QUEUE_PREFIX,
    /** Starts the worker, then the service (in this process) on its queues. */
    async start(): Promise<Harness> {
      await start();
      harness = await startHarness(env);
      return harness;
    },
    async restart(): Promise<void> {
      await killHard(worker!);
      await start();
    },
    async stop(): Promise<void> {
      if (worker && worker.exitCode === null) await killHard(worker);
      await harness?.close();
    },
  };
}
