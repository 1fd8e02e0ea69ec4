import fs from 'node:fs';
import path from 'node:path';
import { startTestService, eventually, type TestService } from '../../support/services';
import { REPO_ROOT } from '../../support/stack-env';
import { ThrowawayPostgres, ThrowawayRedis } from '../../support/throwaway-backends';

/** The release a user names: package.json's, which every probe reports. */
const { version } = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  version: string;
};

/**
 * Readiness follows the real backends: stopping Postgres or Redis turns the probes to 503,
 * starting it again turns them back to 200, with the services running throughout.
 */
describe('readiness probes follow Postgres and Redis', () => {
  let postgres: ThrowawayPostgres;
  let redis: ThrowawayRedis;
  let ledger: TestService;
  let runs: TestService;
  let quota: TestService;

  beforeAll(async () => {
    postgres = await ThrowawayPostgres.create();
    redis = await ThrowawayRedis.create();
    const overrides = { DATABASE_URL: postgres.url, REDIS_URL: redis.url };
    [ledger, runs, quota] = await Promise.all([
      startTestService('ledger', overrides),
      startTestService('runs', overrides),
      startTestService('quota', overrides),
    ]);
  });
  afterAll(async () => {
    await Promise.allSettled([ledger?.close(), runs?.close(), quota?.close()]);
    await redis?.stop();
    postgres?.destroy();
  });

  const probes = () => ({
    ledger: `${ledger.url}/healthz`,
    runs: `${runs.url}/health`,
    runsReady: `${runs.url}/readyz`,
    quota: `${quota.url}/readyz`,
  });

  async function statuses(): Promise<Record<string, number>> {
    const entries = await Promise.all(
      Object.entries(probes()).map(
        async ([name, url]) => [name, (await fetch(url)).status] as const,
      ),
    );
    return Object.fromEntries(entries);
  }

  const until = (expected: Record<string, number>) =>
    eventually(async () => {
      const seen = await statuses();
      return Object.entries(expected).every(([name, status]) => seen[name] === status)
        ? seen
        : undefined;
    }, 20_000);

  it('when both backends are up, then every probe answers 200', async () => {
    await until({ ledger: 200, runs: 200, runsReady: 200, quota: 200 });
    for (const url of [probes().quota, probes().runsReady]) {
      const body = (await (await fetch(url)).json()) as Record<string, string>;
      expect([url, body]).toEqual([url, { status: 'ready', database: 'up', cache: 'up', version }]);
    }
  });

  it('when Postgres stops, then every probe answers 503; when it starts again, 200 without a restart', async () => {
    postgres.stop();
    await until({ ledger: 503, runs: 503, runsReady: 503, quota: 503 });
    expect(await (await fetch(probes().ledger)).json()).toEqual({
      status: 'unhealthy',
      reason: 'database unreachable',
      auth_client_credential: 'unknown',
      version,
    });
    expect(await (await fetch(probes().runs)).json()).toMatchObject({
      database: 'down',
      cache: 'up',
      version,
    });
    // Liveness never asks a backend: every process is alive, and says which release it runs.
    const liveness = [`${ledger.url}/ping`, `${runs.url}/ping`, `${quota.url}/healthz`];
    for (const url of [...liveness, `${quota.url}/ping`]) {
      const alive = await fetch(url);
      expect([url, alive.status, await alive.json()]).toEqual([
        url,
        200,
        { status: 'ok', version },
      ]);
    }

    postgres.start();
    await until({ ledger: 200, runs: 200, runsReady: 200, quota: 200 });
  });

  it('when Redis stops, then the probes that need it answer 503; when it starts again, 200 without a restart', async () => {
    await redis.stop();
    await until({ runs: 503, runsReady: 503, quota: 503 });
    for (const url of [probes().quota, probes().runsReady])
      expect([url, await (await fetch(url)).json()]).toEqual([
        url,
        { status: 'unavailable', database: 'up', cache: 'down', version },
      ]);
    expect((await fetch(probes().ledger)).status).toBe(200);

    await redis.start();
    await until({ ledger: 200, runs: 200, runsReady: 200, quota: 200 });
  });
});
