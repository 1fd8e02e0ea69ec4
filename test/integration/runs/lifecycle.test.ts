import { IMAGE, client, newTenant, startHarness, type Harness } from './support';

describe('a run from submit to a terminal state', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('when a container exits 0, then the run passes scheduled → queued → pulling → running → exited with its output', async () => {
    const { key, tenantId } = await newTenant(h.pool);
    const api = client(h.service.url, key);
    const submitted = await api.submit({ image: IMAGE, command: ['sh', '-c', 'echo hello; echo oops >&2'], env: { A: 'b' } });
    expect(submitted.status).toBe(202);
    expect(submitted.body).toMatchObject({ status: 'scheduled', clamped: false });
    expect(submitted.body.track_id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);

    const run = await api.waitFor(submitted.body.track_id, ['exited', 'failed']);
    expect(run).toMatchObject({ state: 'exited', exit_code: 0, tenant_id: tenantId, image: IMAGE, env: { A: 'b' } });
    expect(run.events.map((e) => e.to_state)).toEqual(['scheduled', 'queued', 'pulling', 'running', 'exited']);
    const result = await api.call('GET', `/api/v1/runs/${submitted.body.track_id}/result`);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ status: 'exited', exit_code: 0, stdout_bytes: 6, stderr_bytes: 5, result_summary: 'hello\n' });
  }, 60_000);
});
