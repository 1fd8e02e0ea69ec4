import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ulid } from 'ulid';
import { freePort } from '../../support/api-process';
import { assertNamedImages, docker, TEST_APP_IMAGE } from '../../support/images';
import { firstCalls, markedCalls, runBash, SERVICES } from '../../support/readme-first-calls';
import { DATA_DIR, REPO_ROOT } from '../../support/stack-env';

/**
 * docker-compose.yml as a new user runs it, from a copy of the clone: the README's Compose block
 * as written (the .env with its secrets made, `docker compose up -d --build --wait`), every
 * service healthy and every one-shot step done; then each service README's first calls through
 * the published ports, the operator CLIs run in the containers as the README says, the runs call
 * executed by the Compose worker on this host's engine; then the README's `docker compose down -v`
 * leaves nothing of the project: no container, volume or network, no run container.
 *
 * The stack of the other tests holds the default ports, so the published ones are the process
 * environment's (which Compose prefers to .env), and the project is a name of the test's own.
 */
jest.setTimeout(30 * 60_000);

const run = promisify(execFile);
const id = ulid().toLowerCase().slice(-10);
const project = `platform-compose-${id}`;
const ONE_SHOTS = ['temporal-schema', 'temporal-setup', 'migrate', 'metering-keys'];

interface PsEntry {
  Service: string;
  State: string;
  Health: string;
  ExitCode: number;
}

/** The tracked and untracked files of the clone (not what git ignores), copied to a new folder. */
function copyOfClone(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'platform-compose-'));
  const files = execFileSync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    {
      cwd: REPO_ROOT,
      maxBuffer: 64 * 1024 * 1024,
    },
  )
    .toString()
    .split('\0')
    .filter((file) => file && fs.existsSync(path.join(REPO_ROOT, file)));
  for (const file of files) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(path.join(REPO_ROOT, file), path.join(dir, file));
    fs.chmodSync(path.join(dir, file), fs.statSync(path.join(REPO_ROOT, file)).mode);
  }
  return dir;
}

describe('docker compose, as the README runs it', () => {
  const clone = copyOfClone();
  const env: NodeJS.ProcessEnv = { ...process.env, COMPOSE_PROJECT_NAME: project };
  const urls = {} as Record<(typeof SERVICES)[number], string>;
  const compose = (args: string[]) =>
    run('docker', ['compose', ...args], { cwd: clone, env, maxBuffer: 64 * 1024 * 1024 });
  let registry = '';

  beforeAll(async () => {
    await assertNamedImages();
    const ports = {
      LEDGER_PORT: await freePort(),
      RUNS_PORT: await freePort(),
      QUOTA_PORT: await freePort(),
      TEMPORAL_PORT: await freePort(),
      TEMPORAL_UI_PORT: await freePort(),
      REGISTRY_PORT: await freePort(),
    };
    for (const [name, port] of Object.entries(ports)) env[name] = String(port);
    Object.assign(env, { WORKER_ID: project, APP_IMAGE: TEST_APP_IMAGE });
    for (const service of SERVICES)
      urls[service] = `http://127.0.0.1:${ports[`${service.toUpperCase()}_PORT` as 'LEDGER_PORT']}`;
    registry = `127.0.0.1:${ports.REGISTRY_PORT}`;
  });

  afterAll(async () => {
    const logs = await compose(['logs', '--no-color', '--timestamps']).catch((e: Error) => e);
    const logFile = path.join(DATA_DIR, 'logs', `${project}.log`);
    fs.writeFileSync(logFile, 'stdout' in logs ? logs.stdout : String(logs));
    await compose(['down', '-v', '--remove-orphans']).catch(() => undefined);
    fs.rmSync(clone, { recursive: true, force: true });
  });

  it('starts every service healthy from a fresh clone, the one-shot steps done', async () => {
    const { script } = markedCalls('README.md', '<!-- compose up:');
    const started = Date.now();
    const up = await runBash(script, env, clone, 25 * 60_000);
    expect({ code: up.code, stderr: up.code === 0 ? '' : up.stderr }).toEqual({
      code: 0,
      stderr: '',
    });
    process.stdout.write(
      `compose: up and healthy in ${Math.round((Date.now() - started) / 1000)} s\n`,
    );

    const { stdout } = await compose(['ps', '--all', '--format', 'json']);
    const entries = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as PsEntry);
    const state = Object.fromEntries(
      entries.map((e) => [
        e.Service,
        ONE_SHOTS.includes(e.Service) ? `exited ${e.ExitCode}` : e.Health || e.State,
      ]),
    );
    expect(state).toEqual({
      postgres: 'healthy',
      redis: 'healthy',
      'temporal-schema': 'exited 0',
      temporal: 'running',
      'temporal-setup': 'exited 0',
      'temporal-ui': 'running',
      registry: 'healthy',
      migrate: 'exited 0',
      'metering-keys': 'exited 0',
      'ledger-api': 'healthy',
      'runs-api': 'healthy',
      'quota-api': 'healthy',
      worker: 'healthy',
    });
  });

  it.each(SERVICES)(
    "answers services/%s/README.md's first calls through the published port, with the CLIs in the containers",
    async (service) => {
      if (service === 'runs') {
        // the README pushes busybox from Docker Hub; here the stack's copy of it goes up instead
        await docker(['tag', '127.0.0.1:5000/busybox:latest', `${registry}/busybox:latest`]);
        await docker(['push', `${registry}/busybox:latest`]);
      }
      const clis = markedCalls('README.md', '<!-- compose clis:').script;
      const calls = firstCalls(service)
        .script.replace(/scripts\/(ledger|runs|quota)-admin/g, '$1-admin')
        .replaceAll('127.0.0.1:5000/', `${registry}/`);
      const ran = await runBash(
        `${clis}\n${calls}`,
        {
          ...env,
          [`${service.toUpperCase()}_URL`]: urls[service],
        },
        clone,
      );
      expect({ code: ran.code, stdout: ran.stdout, stderr: ran.stderr }).toEqual({
        code: 0,
        stdout: firstCalls(service).prints,
        stderr: '',
      });
    },
  );

  it("meters the ledger's calls in the Compose quota service, with the keys metering-keys made", async () => {
    const { stdout } = await compose([
      'exec',
      '-T',
      'quota-api',
      'node',
      'dist/cli/quota.js',
      'tenant',
      'list',
      '--json',
    ]);
    const tenants = (JSON.parse(stdout) as { tenants: { name: string }[] }).tenants;
    expect(tenants.map((t) => t.name)).toContain('platform');
    const { stdout: keys } = await compose([
      'exec',
      '-T',
      'worker',
      'ls',
      '/var/lib/platform/metering',
    ]);
    expect(keys.split('\n').filter(Boolean).sort()).toEqual(['LEDGER_QUOTA_KEY', 'RUNS_QUOTA_KEY']);
  });

  it("leaves nothing of the project after the README's docker compose down -v", async () => {
    const { script } = markedCalls('README.md', '<!-- compose down:');
    const down = await runBash(script, env, clone);
    expect(down.code).toBe(0);
    const label = `label=com.docker.compose.project=${project}`;
    const left = await Promise.all([
      docker(['ps', '-aq', '--filter', label]),
      docker(['volume', 'ls', '-q', '--filter', label]),
      docker(['network', 'ls', '-q', '--filter', label]),
      docker(['ps', '-aq', '--filter', `label=platform.runs.worker_id=${project}`]),
    ]);
    expect(left.map((r) => r.stdout.trim())).toEqual(['', '', '', '']);
  });
});
