import { execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ulid } from 'ulid';
import { freePort, startApiProcess, stopProcessGroup } from '../../support/api-process';
import { DATA_DIR, REPO_ROOT } from '../../support/stack-env';
import { startWorkerProcess } from '../../support/worker-process';
import { killHard } from '../runs/own-worker';

/**
 * Each service README's "First calls" run as a reader runs them: the marked sh block pasted into
 * bash at the clone's root, against the three APIs and a worker, and what it prints compared
 * with the README's own "It prints" block. A README that stops being true fails here.
 */
jest.setTimeout(300_000);

const MARKER = '<!-- first calls:';
const SERVICES = ['ledger', 'runs', 'quota'] as const;
type Service = (typeof SERVICES)[number];

interface FirstCalls {
  script: string;
  prints: string;
}

/** The sh block after the README's one marker, and the text block after it. */
function firstCalls(readme: string): FirstCalls {
  const parts = readme.split(MARKER);
  if (parts.length !== 2) throw new Error(`want exactly one "${MARKER}" marker`);
  const found = /```sh\n([\s\S]*?)```[\s\S]*?```text\n([\s\S]*?)```/.exec(parts[1]!);
  if (!found) throw new Error('the marker is not followed by an sh block and a text block');
  return { script: found[1]!, prints: found[2]! };
}

function runBash(script: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'bash',
      ['-c', `set -euo pipefail\n${script}`],
      { cwd: REPO_ROOT, env, timeout: 180_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe("the READMEs' first calls", () => {
  const id = `first-calls-${ulid().toLowerCase().slice(-10)}`;
  // Queues of its own (under the run's prefix, which the teardown sweeps): the APIs' outboxes
  // then start only what these calls wrote, and this worker serves them.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TASK_QUEUE_PREFIX: `${process.env.TASK_QUEUE_PREFIX ?? ''}${id}-`,
    WORKER_ID: id,
    RUNS_RETENTION_SCHEDULE: 'false',
    QUOTA_JOB_SCHEDULES: 'false',
    LEDGER_HOLD_SWEEP_SCHEDULE: 'false',
    LOG_LEVEL: 'warn',
  };
  const urls = {} as Record<Service, string>;
  let api: ChildProcess | undefined;
  let worker: ChildProcess | undefined;

  beforeAll(async () => {
    const ports = { ledger: await freePort(), runs: await freePort(), quota: await freePort() };
    for (const service of SERVICES) urls[service] = `http://127.0.0.1:${ports[service]}`;
    Object.assign(env, {
      LEDGER_PORT: String(ports.ledger),
      RUNS_PORT: String(ports.runs),
      QUOTA_PORT: String(ports.quota),
    });
    const logs = path.join(DATA_DIR, 'logs');
    worker = await startWorkerProcess(env, path.join(logs, `${id}-worker.log`), { detached: true });
    api = await startApiProcess({
      services: [...SERVICES],
      env,
      logFile: path.join(logs, `${id}-api.log`),
      readyUrls: [`${urls.ledger}/healthz`, `${urls.runs}/ping`, `${urls.quota}/healthz`],
    });
  }, 400_000);
  afterAll(async () => {
    if (api) await stopProcessGroup(api);
    if (worker && worker.exitCode === null) await killHard(worker);
  });

  it.each(SERVICES)(
    'api/%s/README.md: the block runs and prints what the README says',
    async (service) => {
      const readme = fs.readFileSync(path.join(REPO_ROOT, 'api', service, 'README.md'), 'utf8');
      const { script, prints } = firstCalls(readme);
      const urlVariable = `${service.toUpperCase()}_URL`;
      expect(script).toContain(`\${${urlVariable}:-http://localhost:`);
      const ran = await runBash(script, { ...env, [urlVariable]: urls[service] });
      expect({ code: ran.code, stdout: ran.stdout, stderr: ran.stderr }).toEqual({
        code: 0,
        stdout: prints,
        stderr: '',
      });
    },
  );
});
