import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ulid } from 'ulid';
import { freePort, startApiProcess, stopProcessGroup } from '../../support/api-process';
import {
  SERVICES,
  firstCalls,
  meteringCalls,
  runBash,
  type Service,
} from '../../support/readme-first-calls';
import { DATA_DIR } from '../../support/stack-env';
import { startWorkerProcess } from '../../support/worker-process';
import { killHard } from '../runs/own-worker';

/**
 * Each service README's "First calls" run as a reader runs them: the marked sh block pasted into
 * bash at the clone's root, against the three APIs and a worker, and what it prints compared
 * with the README's own "It prints" block. A README that stops being true fails here.
 */
jest.setTimeout(300_000);

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
    'services/%s/README.md: the block runs and prints what the README says',
    async (service) => {
      const { script, prints } = firstCalls(service);
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

  it("README.md: the metering walk-through runs and prints what the README says (the run's platform quota tenant)", async () => {
    const { script, prints } = meteringCalls();
    const ran = await runBash(script, { ...env, RUNS_URL: urls.runs, LEDGER_URL: urls.ledger });
    expect({ code: ran.code, stdout: ran.stdout, stderr: ran.stderr }).toEqual({
      code: 0,
      stdout: prints,
      stderr: '',
    });
  });
});
