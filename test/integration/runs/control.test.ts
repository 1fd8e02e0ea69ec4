import path from 'node:path';
import fs from 'node:fs';
import type { Client } from '@temporalio/client';
import { createDocker } from '../../../platform/docker';
import { OWNER_LABEL } from '../../../activities/docker/containers';
import { sql } from '../../../db/pool';
import { createRedis } from '../../../db/redis';
import { logCacheKeys } from '../../../services/runs/log-store';
import { eventually } from '../../support/services';
import { IMAGE, client, config, newTenant, startHarness, type Harness } from './support';
import { createTemporalClient } from '../../../platform/temporal';
import { CONTROL_ANSWER_TIMEOUT_MS } from '../../../services/runs/control';

type Api = ReturnType<typeof client>;
type Samples = {
  samples: { timestamp: string; cpu_percent: number; memory_mb: number; memory_limit_mb: number }[];
};
type LogPage = { lines: string[]; next_since: number; eof: boolean };

/** A container that prints a counter every 100 ms and burns CPU between lines. */
const BUSY_TICKER = [
  'sh',
  '-c',
  'i=0; while true; do i=$((i+1)); echo "tick $i"; j=0; while [ $j -lt 2000 ]; do j=$((j+1)); done; done',
];

describe('run control, logs and utilization', () => {
  let h: Harness;
  let temporal: Client;
  const docker = createDocker(config);
  beforeAll(async () => {
    h = await startHarness();
    temporal = createTemporalClient(config);
  });
  afterAll(async () => {
    await h?.close();
    await temporal?.connection.close();
  });

  const containersOf = (trackId: string) =>
    docker.listContainers({ all: true, filters: { label: [`${OWNER_LABEL}=run/${trackId}`] } });
  const logs = (api: Api, trackId: string, query = '') =>
    api.call<LogPage>('GET', `/api/v1/runs/${trackId}/logs${query}`);
  const startRunning = async (api: Api, command = BUSY_TICKER) => {
    const { body } = await api.submit({ image: IMAGE, command, timeout_seconds: 120 });
    await api.waitFor(body.track_id, ['running']);
    return body.track_id;
  };

  it('when a running run is paused, then its CPU drops to zero and its logs stop advancing; resumed, both come back', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const trackId = await startRunning(api);
    await eventually(async () => {
      const reply = await api.call<Samples>('GET', `/api/v1/runs/${trackId}/utilization`);
      return reply.body.samples.some((s) => s.cpu_percent > 0) ? true : undefined;
    });
    await eventually(async () =>
      (await logs(api, trackId)).body.lines.length > 5 ? true : undefined,
    );

    const paused = await api.call('POST', `/api/v1/runs/${trackId}/pause`);
    expect(paused.status).toBe(204);
    expect((await api.status(trackId)).body.state).toBe('paused');
    const pausedAt = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 2500));
    const frozenA = (await logs(api, trackId)).body.next_since;
    await new Promise((r) => setTimeout(r, 1000));
    const frozenB = (await logs(api, trackId)).body.next_since;
    expect(frozenB).toBe(frozenA);
    const whilePaused = await api.call<Samples>(
      'GET',
      `/api/v1/runs/${trackId}/utilization?from_ts=${new Date(Date.parse(pausedAt) + 1500).toISOString()}`,
    );
    expect(whilePaused.body.samples.length).toBeGreaterThan(0);
    for (const s of whilePaused.body.samples) expect(s.cpu_percent).toBe(0);
    const before = await api.call<Samples>(
      'GET',
      `/api/v1/runs/${trackId}/utilization?to_ts=${pausedAt}`,
    );
    expect(before.body.samples.some((s) => s.cpu_percent > 0)).toBe(true);
    expect(before.body.samples[0]).toMatchObject({ memory_limit_mb: 256 });

    expect((await api.call('POST', `/api/v1/runs/${trackId}/pause`)).body).toEqual({
      detail: 'not_running',
    });
    expect((await api.call('POST', `/api/v1/runs/${trackId}/resume`)).status).toBe(204);
    await eventually(async () =>
      (await logs(api, trackId)).body.next_since > frozenB ? true : undefined,
    );
    expect(await api.call('POST', `/api/v1/runs/${trackId}/resume`)).toMatchObject({
      status: 409,
      body: { detail: 'not_paused' },
    });

    expect((await api.call('POST', `/api/v1/runs/${trackId}/kill`)).status).toBe(204);
    const run = await api.waitFor(trackId, ['killed']);
    expect(run.events.map((e) => e.event_type)).toEqual([
      'run.scheduled',
      'run.queued',
      'run.pulling',
      'run.running',
      'run.paused',
      'run.resumed',
      'run.killed',
    ]);
    // The container is removed right after the terminal state is recorded.
    await eventually(async () => ((await containersOf(trackId)).length === 0 ? true : undefined));
  }, 60_000);

  it('when a run is stopped, then it gets SIGTERM and ends exited with reason stopped', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const trackId = await startRunning(api, [
      'sh',
      '-c',
      'trap "echo got term; exit 3" TERM; while true; do sleep 0.1; done',
    ]);
    expect((await api.call('POST', `/api/v1/runs/${trackId}/stop`)).status).toBe(204);
    const run = await api.waitFor(trackId, ['exited', 'failed', 'killed']);
    expect(run).toMatchObject({ state: 'exited', reason: 'stopped', exit_code: 3 });
    expect(run.events.map((e) => e.event_type)).toContain('run.stopping');
    const page = await logs(api, trackId, '?stream=stdout');
    expect(page.body).toEqual({ lines: ['got term'], next_since: 1, eof: true });
    expect(await api.call('POST', `/api/v1/runs/${trackId}/stop`)).toMatchObject({
      status: 409,
      body: { detail: 'not_running' },
    });
  }, 60_000);

  it('when two kills race, then exactly one is 204 and the other 409, and the run ends killed', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const trackId = await startRunning(api, ['sleep', '300']);
    const replies = await Promise.all([
      api.call('POST', `/api/v1/runs/${trackId}/kill`),
      api.call('POST', `/api/v1/runs/${trackId}/kill`),
    ]);
    expect(replies.map((r) => r.status).sort()).toEqual([204, 409]);
    expect(await api.waitFor(trackId, ['killed', 'failed', 'exited'])).toMatchObject({
      state: 'killed',
      exit_code: 137,
    });
  }, 60_000);

  it('when a paused run is killed, then it ends killed from paused', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const trackId = await startRunning(api, ['sleep', '300']);
    expect((await api.call('POST', `/api/v1/runs/${trackId}/pause`)).status).toBe(204);
    expect((await api.call('POST', `/api/v1/runs/${trackId}/kill`)).status).toBe(204);
    const run = await api.waitFor(trackId, ['killed', 'failed', 'exited']);
    expect(run.state).toBe('killed');
    expect(run.events.at(-1)).toMatchObject({ from_state: 'paused', to_state: 'killed' });
  }, 60_000);

  it('when a paused run is stopped, then it is thawed, gets SIGTERM and ends exited from paused', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const trackId = await startRunning(api, [
      'sh',
      '-c',
      'trap "echo term; exit 0" TERM; while true; do sleep 0.1; done',
    ]);
    expect((await api.call('POST', `/api/v1/runs/${trackId}/pause`)).status).toBe(204);
    expect((await api.call('POST', `/api/v1/runs/${trackId}/stop`)).status).toBe(204);
    const run = await api.waitFor(trackId, ['exited', 'failed', 'killed']);
    expect(run).toMatchObject({ state: 'exited', reason: 'stopped', exit_code: 0 });
    expect(run.events.at(-1)).toMatchObject({ from_state: 'paused', to_state: 'exited' });
  }, 60_000);

  it('when a control targets a scheduled or finished run, then 409', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const waiting = (await api.submit({ image: IMAGE, scheduled_start: '2999-01-01T00:00:00Z' }))
      .body.track_id;
    for (const action of ['pause', 'stop', 'kill']) {
      expect(await api.call('POST', `/api/v1/runs/${waiting}/${action}`)).toMatchObject({
        status: 409,
        body: { detail: 'not_running' },
      });
    }
    expect(await api.call('POST', `/api/v1/runs/${waiting}/resume`)).toMatchObject({
      status: 409,
      body: { detail: 'not_paused' },
    });
    const done = (await api.submit({ image: IMAGE, command: ['true'] })).body.track_id;
    await api.waitFor(done, ['exited']);
    await eventually(async () =>
      (await temporal.workflow.getHandle(`run/${done}`).describe()).status.name === 'COMPLETED'
        ? true
        : undefined,
    );
    expect(await api.call('POST', `/api/v1/runs/${done}/kill`)).toMatchObject({
      status: 409,
      body: { detail: 'not_running' },
    });
    expect(await api.call('POST', `/api/v1/runs/${done}/resume`)).toMatchObject({
      status: 409,
      body: { detail: 'not_paused' },
    });
  }, 60_000);

  it('when a run is deleted: active → 409 not_terminal; terminal → 204, then 404 and its logs, events and samples gone', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const waiting = (await api.submit({ image: IMAGE, scheduled_start: '2999-01-01T00:00:00Z' }))
      .body.track_id;
    expect(await api.call('DELETE', `/api/v1/runs/${waiting}`)).toMatchObject({
      status: 409,
      body: { detail: 'not_terminal' },
    });

    const done = (await api.submit({ image: IMAGE, command: ['sh', '-c', 'echo bye; sleep 1.5'] }))
      .body.track_id;
    const run = await api.waitFor(done, ['exited']);
    const stdoutFile = run.stdout_file as string;
    expect(fs.readFileSync(stdoutFile, 'utf8')).toBe('bye\n');
    // Every file the capture wrote: the streams, the interleaved `both` the row does not name,
    // and each one's line index.
    const logDir = path.dirname(stdoutFile);
    const written = () => fs.readdirSync(logDir).filter((f) => f.startsWith(`${done}.`));
    expect(written().sort()).toEqual(
      ['both', 'stderr', 'stdout'].flatMap((s) => [`${done}.${s}.log`, `${done}.${s}.log.idx`]),
    );
    expect((await api.call('DELETE', `/api/v1/runs/${done}`)).status).toBe(204);
    expect((await api.status(done)).status).toBe(404);
    expect(written()).toEqual([]);
    expect(
      await h.pool.oneFirst(
        sql.unsafe`SELECT count(*)::int FROM runs.run_events WHERE track_id = ${done}`,
      ),
    ).toBe(0);
    expect(
      await h.pool.oneFirst(
        sql.unsafe`SELECT count(*)::int FROM runs.utilization_samples WHERE track_id = ${done}`,
      ),
    ).toBe(0);
  }, 60_000);

  it('when logs are paged with since and limit, then next_since chains the pages and eof marks the end', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const script =
      'for i in $(seq 1 2500); do echo "out $i"; done; echo "err 1" >&2; echo "err 2" >&2';
    const trackId = (await api.submit({ image: IMAGE, command: ['sh', '-c', script] })).body
      .track_id;
    await api.waitFor(trackId, ['exited']);
    const first = await logs(api, trackId, '?stream=stdout&since=0&limit=1000');
    expect(first.headers.get('x-log-source')).toBe('cache');
    expect(first.body.lines).toHaveLength(1000);
    expect(first.body.lines[0]).toBe('out 1');
    expect(first.body).toMatchObject({ next_since: 1000, eof: false });
    const last = await logs(api, trackId, '?stream=stdout&since=2000&limit=1000');
    expect(last.body.lines).toHaveLength(500);
    expect(last.body).toMatchObject({ next_since: 2500, eof: true });
    expect((await logs(api, trackId, '?stream=stderr')).body).toEqual({
      lines: ['err 1', 'err 2'],
      next_since: 2,
      eof: true,
    });
    // `both` keeps Docker's arrival order, which does not order one stream against the other.
    const tail = await logs(api, trackId, '?limit=2');
    expect(tail.body).toMatchObject({ next_since: 2502, eof: true });
    expect(tail.body.lines).toHaveLength(2);
    const stderrTail = await logs(api, trackId, '?stream=stderr&limit=1');
    expect(stderrTail.body).toEqual({ lines: ['err 2'], next_since: 2, eof: true });
    expect((await logs(api, trackId, '?limit=1001')).status).toBe(422);
    expect((await logs(api, trackId, '?stream=all')).status).toBe(422);

    const redis = createRedis(config, 'runs:');
    await new Promise((resolve) => redis.once('ready', resolve));
    await redis.del(...logCacheKeys(trackId));
    redis.disconnect();
    const fromFile = await logs(api, trackId, '?stream=stdout&since=2499');
    expect(fromFile.headers.get('x-log-source')).toBe('file');
    expect(fromFile.body).toEqual({ lines: ['out 2500'], next_since: 2500, eof: true });
  }, 60_000);
});

describe("a control when the run's workflow cannot answer", () => {
  let h: Harness;
  const temporal = createTemporalClient(config);
  beforeAll(async () => {
    // Task queues no worker polls: the run's workflow is started but never runs.
    // Under the run's own prefix, so the run's teardown ends the workflow nobody runs.
    const prefix = `${process.env.TASK_QUEUE_PREFIX ?? ''}no-worker-${Date.now().toString(36)}-`;
    h = await startHarness({ TASK_QUEUE_PREFIX: prefix });
  });
  afterAll(async () => {
    await h?.close();
    await temporal.connection.close();
  });

  it(`when the workflow does not take the control within ${CONTROL_ANSWER_TIMEOUT_MS} ms, then 503 workflow_unavailable with Retry-After, not a request that hangs`, async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const { track_id } = (await api.submit({ image: IMAGE, command: ['true'] })).body;
    // The submit's workflow is started off the request path: until it exists, the run is only
    // a scheduled row, and pausing that is a 409 not_running, not what this test is about.
    await eventually(
      () =>
        temporal.workflow
          .getHandle(`run/${track_id}`)
          .describe()
          .catch(() => undefined),
      20_000,
    );
    const paused = await api.call('POST', `/api/v1/runs/${track_id}/pause`);
    expect(paused).toMatchObject({ status: 503, body: { detail: 'workflow_unavailable' } });
    expect(paused.headers.get('retry-after')).toBe('1');
  }, 30_000);
});
