import { execFile } from 'node:child_process';
import { REPO_ROOT } from './stack-env';

/** What a run of the health check printed and how it exited. */
export interface HealthcheckRun {
  code: number;
  stdout: string;
  stderr: string;
  elapsedMs: number;
}

/**
 * `cli/healthcheck.ts [args]` as its own process (node --import tsx, as the image runs
 * dist/cli/healthcheck.js with node), with `env` over the current environment. Asynchronous: the
 * processes it asks may answer from the test's own.
 */
export function runHealthcheck(args: string[], env: NodeJS.ProcessEnv): Promise<HealthcheckRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'cli/healthcheck.ts', ...args],
      { cwd: REPO_ROOT, env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
          stdout,
          stderr,
          elapsedMs: Date.now() - started,
        }),
    );
  });
}
