import fs from 'node:fs';
import path from 'node:path';
import { sql } from '../../../db/pool';
import { retentionScheduleId } from '../../../contracts/runs/retention';
import { reconcileScheduleId } from '../../../contracts/runs/reconcile';
import { eventually } from '../../support/services';
import { REPO_ROOT } from '../../support/stack-env';
import { IMAGE, client, config, newTenant, startHarness, type Harness } from './support';
import { createTemporalClient } from '../../../platform/temporal';

/** The release a user names: package.json's, which every probe reports. */
const { version } = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  version: string;
};

describe('runs probes', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('when /health is asked, then it reports database, cache, container runtime up and the Docker workers', async () => {
    const reply = await fetch(`${h.service.url}/health`);
    expect(reply.status).toBe(200);
    const body = (await reply.json()) as { workers: { total: number; busy: number } };
    expect(body).toMatchObject({
      status: 'ok',
      database: 'up',
      cache: 'up',
      container_runtime: 'up',
      version,
    });
    expect(body.workers.total).toBeGreaterThanOrEqual(1);
    expect(body.workers.busy).toBeGreaterThanOrEqual(0);
  });

  it('when a run is running, then /health counts it as busy', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const { body } = await api.submit({ image: IMAGE, command: ['sleep', '60'] });
    await api.waitFor(body.track_id, ['running']);
    await eventually(async () => {
      const health = (await (await fetch(`${h.service.url}/health`)).json()) as {
        workers: { busy: number };
      };
      return health.workers.busy >= 1 ? true : undefined;
    });
    await api.call('POST', `/api/v1/runs/${body.track_id}/kill`);
  }, 30_000);

  it('when /ping and /metrics are asked from loopback, then they answer without a key; /ping says the version', async () => {
    const ping = await fetch(`${h.service.url}/ping`);
    expect([ping.status, await ping.json()]).toEqual([200, { status: 'ok', version }]);
    const metrics = await fetch(`${h.service.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/http_request_duration_seconds/);
  });
});

describe('retention purge', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ RUNS_RETENTION_SCHEDULE: 'true' });
  });
  afterAll(async () => {
    await h?.close();
    const temporal = createTemporalClient(config);
    // The API made both of its schedules (one switch); neither may outlive the test run.
    for (const id of [
      retentionScheduleId(config.taskQueuePrefix),
      reconcileScheduleId(config.taskQueuePrefix),
    ])
      await temporal.schedule
        .getHandle(id)
        .delete()
        .catch(() => undefined);
    await temporal.connection.close();
  });

  it('when a finished run is older than retention_days, then the schedule-run purge deletes it and keeps younger ones', async () => {
    const temporal = createTemporalClient(config);
    try {
      const api = client(h.service.url, (await newTenant(h.pool)).key);
      await api.call('PUT', '/api/v1/tenant/quotas', { retention_days: 2 });
      const old = (await api.submit({ image: IMAGE, command: ['echo', 'old'] })).body.track_id;
      const young = (await api.submit({ image: IMAGE, command: ['echo', 'young'] })).body.track_id;
      const oldRun = await api.waitFor(old, ['exited']);
      await api.waitFor(young, ['exited']);
      await h.pool.query(
        sql.unsafe`UPDATE runs.runs SET finished_at = now() - interval '2 days 1 minute' WHERE track_id = ${old}`,
      );
      await h.pool.query(
        sql.unsafe`UPDATE runs.runs SET finished_at = now() - interval '1 day 23 hours' WHERE track_id = ${young}`,
      );

      const schedule = temporal.schedule.getHandle(retentionScheduleId(config.taskQueuePrefix));
      await eventually(async () =>
        (await schedule.describe().catch(() => null)) ? true : undefined,
      );
      const described = await schedule.describe();
      expect(described.action).toMatchObject({ workflowType: 'runsRetentionPurgeWorkflow' });
      await schedule.trigger();
      // The row goes first (its DELETE commits), its log files right after in the same activity.
      await eventually(
        async () =>
          (await api.status(old)).status === 404 && !fs.existsSync(oldRun.stdout_file as string)
            ? true
            : undefined,
        30_000,
      );
      expect((await api.status(young)).status).toBe(200);
    } finally {
      await temporal.connection.close();
    }
  }, 60_000);
});
