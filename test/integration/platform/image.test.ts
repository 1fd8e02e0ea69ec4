import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ulid } from 'ulid';
import { CONFIG_VARIABLES } from '../../../platform/config';
import { freePort } from '../../support/api-process';
import { REPO_ROOT } from '../../support/stack-env';
import {
  buildPlatformImage,
  docker,
  imageSizeMb,
  TEST_APP_IMAGE,
  waitForHealth,
} from '../../support/images';

/**
 * The Dockerfile built as a user builds it (`docker build .`; where no registry can be reached, its
 * base is the stand-in scripts/images seed made), then the image as an operator meets it: a user
 * that is not root, the version package.json names, its operator CLIs, and its HEALTHCHECK turning
 * healthy once the three APIs it serves answer (on the host's network, against the stack, with a
 * read-only root file system).
 */
jest.setTimeout(20 * 60_000);

const run = promisify(execFile);
const { version } = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  version: string;
};

describe('the image', () => {
  // Kept after the file: its layers are the cache the Compose test's build starts from.
  const image = TEST_APP_IMAGE;
  let inspected: {
    Size: number;
    Config: {
      User: string;
      Labels: Record<string, string>;
      Healthcheck?: { Test: string[] };
    };
  };

  beforeAll(async () => {
    const builtInSeconds = await buildPlatformImage(image);
    [inspected] = JSON.parse((await docker(['image', 'inspect', image])).stdout) as [
      typeof inspected,
    ];
    process.stdout.write(
      `image ${image}: ${imageSizeMb(inspected.Size)} MB, built in ${builtInSeconds} s\n`,
    );
  });
  it('runs as a user that is not root, names its version and licence, and has a health check', async () => {
    expect(inspected.Config.User).toBe('node');
    expect((await docker(['run', '--rm', image, 'id', '-u'])).stdout.trim()).not.toBe('0');
    expect(inspected.Config.Labels).toMatchObject({
      'org.opencontainers.image.version': version,
      'org.opencontainers.image.licenses': 'Apache-2.0',
    });
    expect(inspected.Config.Healthcheck?.Test).toEqual(['CMD', 'node', 'dist/cli/healthcheck.js']);
  });

  it.each(['ledger', 'runs', 'quota', 'platform-metering'])(
    'carries the operator CLI %s, built',
    async (cli) => {
      const { stdout } = await docker([
        'run',
        '--rm',
        image,
        'node',
        `dist/cli/${cli}.js`,
        '--help',
      ]);
      expect(stdout).toMatch(/^usage: /im);
    },
  );

  it('turns healthy once the APIs it serves answer, on a read-only root file system, and they report the version', async () => {
    const ports = { ledger: await freePort(), runs: await freePort(), quota: await freePort() };
    // The stack's settings of this test run (its namespace, queues, backends on the host's
    // loopback), the APIs' ports of their own, no schedules of their own.
    const env: Record<string, string> = {
      LEDGER_PORT: String(ports.ledger),
      RUNS_PORT: String(ports.runs),
      QUOTA_PORT: String(ports.quota),
      RUNS_RETENTION_SCHEDULE: 'false',
      QUOTA_JOB_SCHEDULES: 'false',
      LEDGER_HOLD_SWEEP_SCHEDULE: 'false',
      LOG_LEVEL: 'warn',
    };
    for (const name of CONFIG_VARIABLES)
      if (process.env[name] !== undefined && !(name in env) && !/PORT|BIND_HOST|_FILE$/.test(name))
        env[name] = process.env[name]!;
    const container = `platform-image-test-${ulid().toLowerCase()}`;
    const envArgs = Object.entries(env).flatMap(([name, value]) => ['-e', `${name}=${value}`]);
    await docker([
      'run',
      '-d',
      '--name',
      container,
      '--network',
      'host',
      // as the chart runs it: nothing written but run logs and temporary files
      '--read-only',
      '--tmpfs',
      '/tmp',
      '--tmpfs',
      '/var/lib/platform/run-logs',
      '--health-interval',
      '2s',
      ...envArgs,
      image,
    ]);
    try {
      expect(await waitForHealth(container, 180_000)).toBe('healthy');
      for (const url of [
        `http://127.0.0.1:${ports.ledger}/healthz`,
        `http://127.0.0.1:${ports.runs}/ping`,
        `http://127.0.0.1:${ports.quota}/healthz`,
      ]) {
        const response = await fetch(url);
        expect([url, response.status]).toEqual([url, 200]);
        expect(await response.json()).toMatchObject({ version });
      }
    } finally {
      await run('docker', ['rm', '-f', container]).catch(() => undefined);
    }
  });
});
