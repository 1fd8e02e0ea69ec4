import { freePort } from '../../support/api-process';
import { WORKER_READY_TIMEOUT_MS, ownWorker } from '../runs/own-worker';
import { IMAGE, client, newTenant, type Harness } from '../runs/support';

/**
 * A worker's metrics on its own port (WORKER_METRICS_PORT), as Prometheus scrapes them: the
 * Temporal SDK's for its own task queues beside the process's, after it has served a run.
 */
describe("a worker's /metrics", () => {
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
});
