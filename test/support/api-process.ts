import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { REPO_ROOT } from './stack-env';

export { freePort } from './throwaway-backends';

/**
 * `api/main.ts <services...>` in its own process (node --import tsx, so the pid is the API
 * itself) and process group, with `env` over the current environment; resolves once every
 * `readyUrls` answers 2xx. Its output goes to `logFile`.
 */
export async function startApiProcess(options: {
  services: string[];
  env: NodeJS.ProcessEnv;
  logFile: string;
  readyUrls: string[];
  timeoutMs?: number;
  /** Node options of the API process itself, e.g. --cpu-prof. */
  nodeArgs?: string[];
}): Promise<ChildProcess> {
  fs.mkdirSync(path.dirname(options.logFile), { recursive: true });
  const log = fs.openSync(options.logFile, 'a');
  const api = spawn(
    process.execPath,
    [...(options.nodeArgs ?? []), '--import', 'tsx', 'api/main.ts', ...options.services],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', log, log],
      detached: true,
    },
  );
  const deadline = Date.now() + (options.timeoutMs ?? 180_000);
  for (;;) {
    const up = await Promise.all(
      options.readyUrls.map((url) =>
        fetch(url).then(
          (r) => r.ok,
          () => false,
        ),
      ),
    );
    if (up.every(Boolean)) return api;
    if (api.exitCode !== null || Date.now() > deadline) {
      void stopProcessGroup(api);
      throw new Error(`API (${options.services.join(', ')}) did not start; see ${options.logFile}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * SIGTERM to the process group of a child started `detached`, then SIGKILL to what is left of
 * it after `graceMs`; resolves when the child has exited (or at once if it had).
 */
export async function stopProcessGroup(child: ChildProcess, graceMs = 20_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, name);
    } catch {
      // the group is gone
    }
  };
  signal('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), graceMs);
  });
  if ((await Promise.race([exited, late])) === 'late') {
    signal('SIGKILL');
    await exited;
  }
  clearTimeout(timer);
  // Whatever of its group outlived it (a tsx wrapper's child).
  signal('SIGKILL');
}
