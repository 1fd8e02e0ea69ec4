import type { ChildProcess } from 'node:child_process';

export default async function globalTeardown(): Promise<void> {
  const worker = (globalThis as { __testWorker?: ChildProcess }).__testWorker;
  if (!worker || worker.exitCode !== null) return;
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  worker.kill('SIGTERM');
  const timeout = setTimeout(() => worker.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timeout);
}
