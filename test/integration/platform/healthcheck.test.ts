import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { freePort } from '../../support/api-process';
import { runHealthcheck } from '../../support/healthcheck';
import { eventually, startTestService, type TestService } from '../../support/services';
import { REPO_ROOT } from '../../support/stack-env';

/**
 * The image's HEALTHCHECK (cli/healthcheck.ts) against processes that really listen: the three
 * APIs on the stack, a server whose readiness says 503, one that accepts and never answers, and
 * ports nothing listens on. Every port is named in the environment, as a container's are, so a
 * platform running on the default ports beside the tests is never asked.
 */
jest.setTimeout(120_000);

const { version } = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  version: string;
};

/** A server on a free loopback port; `handle` null: it accepts and never answers. */
async function listening(handle: http.RequestListener | null): Promise<http.Server> {
  const server = http.createServer(handle ?? (() => undefined));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}
const portOf = (server: http.Server) => (server.address() as net.AddressInfo).port;

describe('the health check (cli/healthcheck.ts)', () => {
  let ledger: TestService;
  let runs: TestService;
  let quota: TestService;
  let notReady: http.Server;
  let silent: http.Server;
  let unused: number[];

  beforeAll(async () => {
    [ledger, runs, quota] = await Promise.all([
      startTestService('ledger'),
      startTestService('runs'),
      startTestService('quota'),
    ]);
    notReady = await listening((_req, res) => {
      res.writeHead(503, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ status: 'unavailable', database: 'down' }));
    });
    silent = await listening(null);
    unused = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  });
  afterAll(async () => {
    silent?.closeAllConnections();
    await Promise.allSettled([
      ledger?.close(),
      runs?.close(),
      quota?.close(),
      new Promise((resolve) => notReady?.close(resolve)),
      new Promise((resolve) => silent?.close(resolve)),
    ]);
  });

  /** Every port of the check, nothing listening on any unless named. */
  const ports = (listen: { ledger?: number; runs?: number; quota?: number; worker?: number }) => ({
    LEDGER_PORT: String(listen.ledger ?? unused[0]),
    RUNS_PORT: String(listen.runs ?? unused[1]),
    QUOTA_PORT: String(listen.quota ?? unused[2]),
    WORKER_METRICS_PORT: String(listen.worker ?? unused[3]),
  });

  it("when a role's process is ready, then it asks that role's readiness probe and exits 0, printing what it asked and got", async () => {
    const env = ports({ ledger: ledger.port, runs: runs.port, quota: quota.port });
    const asked = {
      ledger: `GET http://127.0.0.1:${ledger.port}/healthz: 200 `,
      // runs: /readyz, not /health (which also needs a Docker engine beside the API).
      runs: `GET http://127.0.0.1:${runs.port}/readyz: 200 `,
      quota: `GET http://127.0.0.1:${quota.port}/readyz: 200 `,
    };
    for (const [role, line] of Object.entries(asked)) {
      // Ready is the premise: on a loaded machine a backend check of the service may time out for
      // a second (the ledger's monitor then reports the database unreachable), so ask until ready.
      const run = await eventually(async () => {
        const attempt = await runHealthcheck([role], env);
        return attempt.code === 0 ? attempt : undefined;
      }, 30_000).catch(() => runHealthcheck([role], env));
      expect([role, run.code, run.stderr]).toEqual([role, 0, '']);
      expect(run.stdout).toContain(`${role}: ${line}`);
      expect(run.stdout).toContain(`"version":"${version}"`);
      expect(run.stdout.trim().split('\n')).toHaveLength(1);
    }
  });

  it('when no role is named, then every port that listens is asked: 0 when all of them are ready, 1 when one is not', async () => {
    const all = await runHealthcheck(
      [],
      ports({ ledger: ledger.port, runs: runs.port, quota: quota.port }),
    );
    expect([all.code, all.stderr]).toEqual([0, '']);
    // The worker's port listens nowhere here: not asked, and not held against the others.
    expect(
      all.stdout
        .trim()
        .split('\n')
        .map((line) => line.split(':')[0]),
    ).toEqual(['ledger', 'runs', 'quota']);

    const one = await runHealthcheck([], ports({ ledger: ledger.port }));
    expect([one.code, one.stdout.trim().split('\n')]).toEqual([
      0,
      [expect.stringMatching(/^ledger: GET .*\/healthz: 200 /)],
    ]);

    const mixed = await runHealthcheck([], ports({ ledger: ledger.port, quota: portOf(notReady) }));
    expect(mixed.code).toBe(1);
    expect(mixed.stderr).toContain(`ledger: GET http://127.0.0.1:${ledger.port}/healthz: 200 `);
    expect(mixed.stderr).toContain(
      `quota: GET http://127.0.0.1:${portOf(notReady)}/readyz: 503 {"status":"unavailable","database":"down"}`,
    );
  });

  it('when the readiness probe answers 503, then it exits 1 and says so', async () => {
    const run = await runHealthcheck(['worker'], ports({ worker: portOf(notReady) }));
    expect([run.code, run.stdout]).toEqual([1, '']);
    expect(run.stderr).toBe(
      `worker: GET http://127.0.0.1:${portOf(notReady)}/readyz: 503 {"status":"unavailable","database":"down"}\n`,
    );
  });

  it('when nothing listens, then it exits 1: for a role, its port refuses; without one, no port listens', async () => {
    const role = await runHealthcheck(['runs'], ports({}));
    expect([role.code, role.stderr]).toEqual([
      1,
      `runs: GET http://127.0.0.1:${unused[1]}/readyz: connection refused\n`,
    ]);
    const none = await runHealthcheck([], ports({}));
    expect([none.code, none.stderr]).toEqual([
      1,
      `nothing listens on 127.0.0.1 at ledger ${unused[0]}, runs ${unused[1]}, quota ${unused[2]}, worker ${unused[3]}\n`,
    ]);
  });

  it('when the process accepts but does not answer, then it gives up after 3 s and exits 1', async () => {
    const run = await runHealthcheck(['quota'], ports({ quota: portOf(silent) }));
    expect([run.code, run.stderr]).toEqual([
      1,
      `quota: GET http://127.0.0.1:${portOf(silent)}/readyz: no answer within 3000 ms\n`,
    ]);
    expect(run.elapsedMs).toBeGreaterThanOrEqual(3_000);
  });

  it("when the worker's port is 0 (a free one chosen at start), then there is nothing to ask: exit 1", async () => {
    const run = await runHealthcheck(['worker'], ports({ worker: 0 }));
    expect([run.code, run.stderr]).toEqual([
      1,
      'worker: its port is 0 (chosen at start): nothing to ask\n',
    ]);
  });

  it('when the role is unknown or more than one is named, then it exits 2 with its usage', async () => {
    for (const args of [['scheduler'], ['ledger', 'runs'], ['--help'], ['constructor']]) {
      const run = await runHealthcheck(args, ports({ ledger: ledger.port }));
      expect([args, run.code, run.stdout]).toEqual([args, 2, '']);
      expect(run.stderr).toMatch(/^usage: healthcheck \[ledger\|runs\|quota\|worker\]/);
    }
  });
});
