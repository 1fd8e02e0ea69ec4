import { eventually } from '../../support/services';
import { IMAGE, client, newTenant, startHarness, type Harness } from './support';

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

  it('when /ping and /metrics are asked from loopback, then they answer without a key', async () => {
    expect((await fetch(`${h.service.url}/ping`)).status).toBe(200);
    const metrics = await fetch(`${h.service.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/http_request_duration_seconds/);
  });
});
