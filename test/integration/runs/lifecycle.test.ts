import { eventually } from '../../support/services';
import { createDocker } from '../../../platform/docker';
import { OWNER_LABEL } from '../../../activities/docker/containers';
import { IMAGE, client, config, newTenant, startHarness, type Harness } from './support';

const docker = createDocker(config);
const containersOf = (trackId: string) =>
  docker.listContainers({ all: true, filters: { label: [`${OWNER_LABEL}=run/${trackId}`] } });

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
    const submitted = await api.submit({
      image: IMAGE,
      command: ['sh', '-c', 'echo hello; echo oops >&2'],
      env: { A: 'b' },
    });
    expect(submitted.status).toBe(202);
    expect(submitted.body).toMatchObject({ status: 'scheduled', clamped: false });
    expect(submitted.body.track_id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);

    const run = await api.waitFor(submitted.body.track_id, ['exited', 'failed']);
    expect(run).toMatchObject({
      state: 'exited',
      exit_code: 0,
      tenant_id: tenantId,
      image: IMAGE,
      env: { A: 'b' },
    });
    expect(run.events.map((e) => e.to_state)).toEqual([
      'scheduled',
      'queued',
      'pulling',
      'running',
      'exited',
    ]);
    const result = await api.call('GET', `/api/v1/runs/${submitted.body.track_id}/result`);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({
      status: 'exited',
      exit_code: 0,
      stdout_bytes: 6,
      stderr_bytes: 5,
      result_summary: 'hello\n',
    });
  }, 60_000);

  it('when a container exits non-zero, then the run ends failed with its exit code', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const { body } = await api.submit({ image: IMAGE, command: ['sh', '-c', 'exit 7'] });
    const run = await api.waitFor(body.track_id, ['exited', 'failed']);
    expect(run).toMatchObject({ state: 'failed', exit_code: 7, reason: 'nonzero_exit' });
    expect((await api.call('GET', `/api/v1/runs/${body.track_id}/result`)).body).toMatchObject({
      status: 'failed',
      exit_code: 7,
    });
  }, 30_000);

  it('when the image cannot be pulled, then the run fails from pulling with reason image_pull_failed', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const { body } = await api.submit({ image: `${config.registryAddress}/no-such-image:1` });
    const run = await api.waitFor(body.track_id, ['failed']);
    expect(run).toMatchObject({ reason: 'image_pull_failed', exit_code: null, started_at: null });
    expect(run.events.map((e) => e.to_state)).toEqual(['scheduled', 'queued', 'pulling', 'failed']);
  }, 60_000);

  it('when a run outlives timeout_seconds, then its container is killed and it ends timeout', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const { body } = await api.submit({
      image: IMAGE,
      command: ['sleep', '60'],
      timeout_seconds: 1,
    });
    const run = await api.waitFor(body.track_id, ['timeout', 'exited', 'failed', 'killed']);
    expect(run).toMatchObject({ state: 'timeout', reason: 'timeout', exit_code: 137 });
    const result = (await api.call('GET', `/api/v1/runs/${body.track_id}/result`)).body as {
      duration_seconds: number;
    };
    expect(result.duration_seconds).toBeGreaterThanOrEqual(1);
    expect(result.duration_seconds).toBeLessThan(30);
    // The container is removed right after the terminal state is recorded.
    await eventually(async () =>
      (await containersOf(body.track_id)).length === 0 ? true : undefined,
    );
  }, 60_000);

  it('when a run is deferred, then it waits scheduled until eligible_start and then runs', async () => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    const start = new Date(Date.now() + 2000).toISOString();
    const { body } = await api.submit({ image: IMAGE, command: ['true'], scheduled_start: start });
    expect((await api.status(body.track_id)).body.state).toBe('scheduled');
    const run = await api.waitFor(body.track_id, ['exited']);
    expect(Date.parse(run.started_at as string)).toBeGreaterThanOrEqual(Date.parse(start));
  }, 30_000);

  describe('with max_concurrent_runs = 1', () => {
    let api: ReturnType<typeof client>;
    let blocker: string;
    beforeEach(async () => {
      api = client(h.service.url, (await newTenant(h.pool)).key);
      await api.call('PUT', '/api/v1/tenant/quotas', { max_concurrent_runs: 1 });
      blocker = (await api.submit({ image: IMAGE, command: ['sleep', '300'] })).body.track_id;
      await api.waitFor(blocker, ['running']);
    });
    afterEach(async () => {
      await api.call('POST', `/api/v1/runs/${blocker}/kill`);
    });

    it('when a second run is submitted, then it is accepted, waits at queue_position 1, and runs once the slot frees', async () => {
      const second = await api.submit({ image: IMAGE, command: ['true'] });
      expect(second.status).toBe(202);
      await new Promise((r) => setTimeout(r, 1500));
      const waiting = await api.status(second.body.track_id);
      expect(waiting.body).toMatchObject({ state: 'scheduled' });
      expect(waiting.body.scheduling_info).toMatchObject({
        queue_position: 1,
        estimated_start: null,
      });
      await api.call('POST', `/api/v1/runs/${blocker}/kill`);
      const blocked = await api.waitFor(blocker, ['killed']);
      const run = await api.waitFor(second.body.track_id, ['exited']);
      expect(Date.parse(run.started_at as string)).toBeGreaterThanOrEqual(
        Date.parse(blocked.finished_at as string),
      );
      expect((await api.status(run.track_id as string)).body.scheduling_info).toMatchObject({
        queue_position: null,
      });
    }, 60_000);

    it('when the tenant has finished runs, then a waiting run gets a soft estimated_start from their durations', async () => {
      await api.call('POST', `/api/v1/runs/${blocker}/kill`);
      await api.waitFor(blocker, ['killed']);
      blocker = (await api.submit({ image: IMAGE, command: ['sleep', '300'] })).body.track_id;
      await api.waitFor(blocker, ['running']);
      const before = Date.now();
      const waiting = await api.submit({ image: IMAGE, command: ['true'] });
      const info = (await api.status(waiting.body.track_id)).body.scheduling_info as {
        queue_position: number;
        estimated_start: string | null;
      };
      expect(info.queue_position).toBe(1);
      expect(info.estimated_start).not.toBeNull();
      expect(Date.parse(info.estimated_start!)).toBeGreaterThan(before);
    }, 60_000);

    it('when expires_at passes before a slot frees, then the run fails expired and is never dispatched', async () => {
      const expiresAt = new Date(Date.now() + 1500).toISOString();
      const { body } = await api.submit({ image: IMAGE, command: ['true'], expires_at: expiresAt });
      const run = await api.waitFor(body.track_id, ['failed', 'exited']);
      expect(run).toMatchObject({
        state: 'failed',
        reason: 'expired',
        worker_id: null,
        container_id: null,
        started_at: null,
      });
      expect(run.events.map((e) => e.to_state)).toEqual(['scheduled', 'failed']);
      expect(run.events[1]).toMatchObject({ from_state: 'scheduled', reason: 'expired' });
      expect(Date.parse(run.finished_at as string)).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    }, 30_000);

    it('when a run waits longer than max_queue_seconds past eligible_start, then it fails queue_timeout', async () => {
      await api.call('PUT', '/api/v1/tenant/quotas', { max_queue_seconds: 1 });
      const { body } = await api.submit({ image: IMAGE, command: ['true'] });
      const run = await api.waitFor(body.track_id, ['failed', 'exited']);
      expect(run).toMatchObject({ state: 'failed', reason: 'queue_timeout', started_at: null });
      expect(run.events.map((e) => e.to_state)).toEqual(['scheduled', 'failed']);
    }, 30_000);
  });
});

describe('a run whose workflow could not be started at submit', () => {
  let h: Harness;
  let noTemporal: Harness;
  beforeAll(async () => {
    h = await startHarness();
    noTemporal = await startHarness({ TEMPORAL_ADDRESS: '127.0.0.1:1' });
  });
  // Closing waits (boundedly) for the start that cannot reach Temporal.
  afterAll(async () => {
    await noTemporal?.close();
    await h?.close();
  }, 30_000);

  it('when Temporal is unreachable at submit, then the run is still accepted and the sweeper starts it later', async () => {
    const { key } = await newTenant(h.pool);
    const submitted = await client(noTemporal.service.url, key).submit({
      image: IMAGE,
      command: ['echo', 'late'],
    });
    expect(submitted.status).toBe(202);
    const run = await client(h.service.url, key).waitFor(
      submitted.body.track_id,
      ['exited', 'failed'],
      60_000,
    );
    expect(run).toMatchObject({ state: 'exited', exit_code: 0 });
    expect(run.events.map((e) => e.to_state)).toEqual([
      'scheduled',
      'queued',
      'pulling',
      'running',
      'exited',
    ]);
  }, 90_000);
});
