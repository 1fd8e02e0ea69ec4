import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DATA_DIR } from './stack-env';
import { loadConfig } from '../../platform/config';
import { cleanTestNamespace } from './test-namespace';
import { stopProcessGroup } from './api-process';

export default async function globalTeardown(): Promise<void> {
  const worker = (globalThis as { __testWorker?: ChildProcess }).__testWorker;
  if (worker && worker.exitCode === null) {
    // 'close', not 'exit': tsx's own child holds the stdout pipe until it has exited too.
    const exited = new Promise((resolve) => worker.once('close', resolve));
    worker.kill('SIGTERM');
    const timeout = setTimeout(() => worker.kill('SIGKILL'), 15_000);
    // SIGKILL reaches tsx, not always its child: past this the run ends without waiting on it.
    const givenUp = new Promise((resolve) => setTimeout(resolve, 30_000).unref());
    await Promise.race([exited, givenUp]);
    clearTimeout(timeout);
  }
  const quota = (globalThis as { __platformQuota?: ChildProcess }).__platformQuota;
  if (quota) await stopProcessGroup(quota);
  await reportCleaned();
  // The exited worker's process handle is released a moment after 'close'; without this pause
  // it would be listed below as a leak it is not.
  await new Promise((resolve) => setTimeout(resolve, 200));
  // What still keeps this process alive once every test is done: a test that leaks a socket,
  // timer or server shows up here (scripts/test passes --forceExit so a leak cannot hang CI).
  const resources = process.getActiveResourcesInfo();
  fs.writeFileSync(
    path.join(DATA_DIR, 'logs', 'jest-active-resources.log'),
    resources.join('\n') + '\n',
  );
}

/** What this run left running in the tests' namespace is ended; said aloud, so a leak is seen. */
async function reportCleaned(): Promise<void> {
  const config = loadConfig();
  const left = await cleanTestNamespace(config, config.taskQueuePrefix);
  const orphans =
    left.orphanExecutions + left.orphanSchedules > 0
      ? `; of earlier runs that died before their teardown: ${left.orphanExecutions} executions, ${left.orphanSchedules} schedules`
      : '';
  console.log(
    `test namespace ${config.temporalNamespace} cleaned: ${left.executions} executions terminated, ${left.schedules} schedules deleted${orphans}`,
  );
}
