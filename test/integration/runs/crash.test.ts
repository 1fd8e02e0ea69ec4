import fs from 'node:fs';
import { createDocker } from '../../../platform/docker';
import { OWNER_LABEL } from '../../../activities/docker/containers';
import { WORKER_READY_TIMEOUT_MS, ownWorker } from './own-worker';
import { eventually } from '../../support/services';
import { ulid } from 'ulid';
import { runAdmin } from '../../../cli/runs';
import { IMAGE, client, config, newTenant, quotaRecords, type Harness } from './support';

describe('a worker killed while its run is running', () => {
  const own = ownWorker('crash');
  let h: Harness;
  beforeAll(async () => {
    h = await own.start();
  }, WORKER_READY_TIMEOUT_MS);
  afterAll(() => own.stop());

  it('when the worker is killed -9 and started again, then the run ends right with one container, its exit code and all its logs', async () => {
    const tier = `tier-${ulid().toLowerCase().slice(-8)}`;
    await runAdmin(['tier', 'set', tier, '--metered', 'true'], h.pool);
    const tenant = await newTenant(h.pool, { tier });
    const api = client(h.service.url, tenant.key);
    const script =
      'for i in $(seq 1 40); do echo "line $i"; sleep 0.5; done; echo done >&2; exit 5';
    const { body } = await api.submit({
      image: IMAGE,
      command: ['sh', '-c', script],
      timeout_seconds: 300,
    });
    const running = await api.waitFor(body.track_id, ['running'], 120_000);
    expect(running.worker_id).toBe(own.id);
    const docker = createDocker(config);
    const containers = () =>
      docker.listContainers({
        all: true,
        filters: { label: [`${OWNER_LABEL}=run/${body.track_id}`] },
      });
    const [container] = await containers();
    expect(container).toBeDefined();

    await eventually(async () => {
      const page = await api.call<{ lines: string[] }>(
        'GET',
        `/api/v1/runs/${body.track_id}/logs?stream=stdout`,
      );
      return page.body.lines.length >= 2 ? true : undefined;
    });
    await own.restart();
    expect((await containers()).map((c) => c.Id)).toEqual([container!.Id]);

    const run = await api.waitFor(
      body.track_id,
      ['exited', 'failed', 'timeout', 'killed'],
      120_000,
    );
    expect(run).toMatchObject({
      state: 'failed',
      exit_code: 5,
      reason: 'nonzero_exit',
      container_id: container!.Id,
    });
    const stdout = await api.call<{ lines: string[]; eof: boolean }>(
      'GET',
      `/api/v1/runs/${body.track_id}/logs?stream=stdout`,
    );
    expect(stdout.body.lines).toEqual(Array.from({ length: 40 }, (_, i) => `line ${i + 1}`));
    expect(stdout.body.eof).toBe(true);
    expect(fs.readFileSync(run.stdout_file as string, 'utf8')).toBe(
      stdout.body.lines.map((l) => `${l}\n`).join(''),
    );
    const stderr = await api.call<{ lines: string[] }>(
      'GET',
      `/api/v1/runs/${body.track_id}/logs?stream=stderr`,
    );
    expect(stderr.body.lines).toEqual(['done']);
    expect(run.events.map((e) => e.to_state)).toEqual([
      'scheduled',
      'queued',
      'pulling',
      'running',
      'failed',
    ]);
    await eventually(async () => ((await containers()).length === 0 ? true : undefined));
    // Metered: the run's 300 seconds reserved once and committed once with the ~20 it ran. The
    // commit follows the container's removal (finishRun: transition, removal, then the settle).
    const ledger = await eventually(async () => {
      const entries = await quotaRecords(tenant).ledger();
      return entries.length >= 2 ? entries : undefined;
    });
    expect(ledger.map((e) => e.entry_type)).toEqual(['reserve', 'commit']);
    const committed = 300 + ledger[1]!.amount;
    expect(committed).toBeGreaterThanOrEqual(20);
    expect(committed).toBeLessThan(60);
  }, 400_000);
});
