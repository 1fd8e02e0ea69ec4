import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../../support/api-process';
import { runHealthcheck } from '../../support/healthcheck';
import { eventually } from '../../support/services';
import { REPO_ROOT } from '../../support/stack-env';
import { WORKER_READY_TIMEOUT_MS, ownWorker } from '../runs/own-worker';
import { IMAGE, client, newTenant, type Harness } from '../runs/support';

const { version } = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  version: string;
};

/**
 * A worker's metrics on its own port (WORKER_METRICS_PORT), as Prometheus scrapes them: the
 * Temporal SDK's for its own task queues beside the process's, after it has served a run. The
 * same port answers its probes: liveness (/healthz, /ping) and readiness (/readyz).
 */
describe("a worker's /metrics and probes", () => {
  let port: number;
  let own: ReturnType<typeof ownWorker>;
  let h: Harness;
  beforeAll(async () => {
    port = await freePort();
    own = ownWorker('metrics', { WORKER_METRICS_PORT: String(port) });
    h = await own.start();
  }, WORKER_READY_TIMEOUT_MS);
  afterAll(() => own.stop());

  /** Every sample of `name` (the labels as text) with its value. */
  const samples = (text: string, name: string) =>
    text
      .split('\n')
      .filter((line) => line.startsWith(`${name}{`))
      .map((line) => ({
        labels: line.slice(line.indexOf('{'), line.lastIndexOf('}') + 1),
        value: Number(line.split(' ').pop()),
      }));

  it('when the worker has run a workflow, then its port serves the SDK metrics of its own task queues and the process metrics', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const { body } = await api.submit({ image: IMAGE, command: ['echo', 'metrics'] });
    await api.waitFor(body.track_id, ['exited'], 120_000);

    const reply = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toContain('text/plain');
    const text = await reply.text();
    const ofThisWorker = (name: string) =>
      samples(text, name).filter((s) => s.labels.includes(`worker_id="${own.id}"`));

    // What scales workers: free slots per queue, and how long tasks waited for one.
    const slots = ofThisWorker('temporal_worker_task_slots_available');
    expect(slots.length).toBeGreaterThan(0);
    expect(slots.filter((s) => !s.labels.includes(`task_queue="${own.queuePrefix}`))).toEqual([]);
    expect(
      slots.some((s) => s.labels.includes('worker_type="WorkflowWorker"') && s.value > 0),
    ).toBe(true);
    const waited = ofThisWorker('temporal_workflow_task_schedule_to_start_latency_seconds_count');
    expect(waited.reduce((sum, s) => sum + s.value, 0)).toBeGreaterThan(0);
    expect(ofThisWorker('temporal_sticky_cache_size').length).toBeGreaterThan(0);
    // The process's own.
    for (const name of [
      'process_cpu_user_seconds_total',
      'nodejs_eventloop_lag_seconds',
      'process_resident_memory_bytes',
    ])
      expect([name, text.includes(`${name}{worker_id="${own.id}"}`)]).toEqual([name, true]);

    expect((await fetch(`http://127.0.0.1:${port}/elsewhere`)).status).toBe(404);
  });

  it('when the worker polls, then /healthz and /ping say it is alive, and /readyz that each of its Temporal workers is RUNNING, with the version; the health check exits 0', async () => {
    for (const probe of ['/healthz', '/ping']) {
      const alive = await fetch(`http://127.0.0.1:${port}${probe}`);
      expect([probe, alive.status, await alive.json()]).toEqual([
        probe,
        200,
        { status: 'ok', version },
      ]);
    }
    // "worker polling" is logged as run() is called on each: RUNNING follows at once.
    const ready = await eventually(async () => {
      const reply = await fetch(`http://127.0.0.1:${port}/readyz`);
      return reply.status === 200 ? reply : undefined;
    }, 10_000);
    expect(ready.headers.get('content-type')).toContain('application/json');
    const { workers, ...rest } = (await ready.json()) as {
      status: string;
      workers: Record<string, string>;
    };
    expect(rest).toEqual({ status: 'ok', version });
    const queues = Object.keys(workers);
    // Its own queues only (the runs, ledger and quota ones, the Docker host's), each RUNNING.
    expect(queues.length).toBeGreaterThanOrEqual(3);
    expect(queues.filter((queue) => !queue.startsWith(own.queuePrefix))).toEqual([]);
    expect(new Set(Object.values(workers))).toEqual(new Set(['RUNNING']));

    const unused = String(await freePort());
    const check = await runHealthcheck(['worker'], {
      WORKER_METRICS_PORT: String(port),
      LEDGER_PORT: unused,
      RUNS_PORT: unused,
      QUOTA_PORT: unused,
    });
    expect([check.code, check.stderr]).toEqual([0, '']);
    expect(check.stdout).toContain(
      `worker: GET http://127.0.0.1:${port}/readyz: 200 {"status":"ok","workers":{`,
    );
  });
});
