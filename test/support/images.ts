import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './stack-env';

const run = promisify(execFile);
const BUFFER_BYTES = 64 * 1024 * 1024;

/** The app image the suite builds (test/integration/platform/image.test.ts) and composes. */
export const TEST_APP_IMAGE = 'platform-app:test';

/** The docker CLI on the host's engine; a failure carries what it printed. */
export const docker = (args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  run('docker', args, { maxBuffer: BUFFER_BYTES, ...options });

/** The images the Dockerfile and docker-compose.yml name (deploy/offline-images/images.txt). */
export function namedImages(): string[] {
  const list = fs.readFileSync(path.join(REPO_ROOT, 'deploy/offline-images/images.txt'), 'utf8');
  return list
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim().split(/\s+/))
    .filter((fields) => fields.length === 2)
    .map((fields) => fields[1]!);
}

/** Fails, saying how, unless the engine has every image the files name (pulled or stand-ins). */
export async function assertNamedImages(): Promise<void> {
  for (const image of namedImages()) {
    await docker(['image', 'inspect', image]).catch(() => {
      throw new Error(`the engine has no ${image}: scripts/test makes it (scripts/images seed)`);
    });
  }
}

/** `docker build -t image <context>` as a user runs it; resolves with the seconds it took. */
export async function buildPlatformImage(image: string, context = REPO_ROOT): Promise<number> {
  await assertNamedImages();
  const started = Date.now();
  await docker(['build', '-t', image, context]).catch((error: { stderr?: string }) => {
    throw new Error(`docker build failed:\n${(error.stderr ?? '').slice(-4000)}`);
  });
  return Math.round((Date.now() - started) / 1000);
}

export const imageSizeMb = (bytes: number): number => Math.round(bytes / 1e6);

/** The container's health once it is no longer `starting`, or `starting` at the deadline. */
export async function waitForHealth(container: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { stdout } = await docker(['inspect', '-f', '{{.State.Health.Status}}', container]);
    const status = stdout.trim();
    if (status !== 'starting' || Date.now() > deadline) return status;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
