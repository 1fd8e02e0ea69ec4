import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import type { Client } from '@temporalio/client';
import { ulid } from 'ulid';
import { createDocker } from '../../../platform/docker';
import { createTemporalClient } from '../../../platform/temporal';
import { OWNER_LABEL } from '../../../activities/docker/containers';
import type { ReconcileInput } from '../../../workflows/runs/reconcile';
import { eventually } from '../../support/services';
import { DATA_DIR } from '../../support/stack-env';
import { WORKER_READY_TIMEOUT_MS, startWorkerProcess } from '../../support/worker-process';
import { killHard } from './own-worker';
import {
  IMAGE,
  client,
  config,
  newTenant,
  reconcilePass,
  startHarness,
  type Harness,
} from './support';

/**
 * Two Docker hosts of one deployment (two workers, one task-queue prefix, their own WORKER_IDs)
 * on the stack's engine. The host of a running run is killed for good: a reconcile pass that
 * finds it silent past the grace tells the run, which ends failed host_lost, and the other host
 * goes on taking runs. When the lost host comes back, its worker removes the container it left.
 * `RECORD_RUN_HISTORIES=1` records the run's and the telling pass's histories for the replay
 * project.
 */
const HISTORIES = path.resolve(__dirname, '../../histories/runs');
describe('a running run whose host is lost', () => {
  const deployment = `host-lost-${ulid().toLowerCase().slice(-10)}`;
  const prefix = `${config.taskQueuePrefix}${deployment}-`;
  const hostIds = { lost: `${deployment}-a`, survivor: `${deployment}-b` };
  const workers: Partial<Record<keyof typeof hostIds, ChildProcess>> = {};
  let h: Harness;
  let temporal: Client;
  const docker = createDocker(config);
  const containers = (trackId: string) =>
    docker.listContainers({ all: true, filters: { label: [`${OWNER_LABEL}=run/${trackId}`] } });

  const startHost = async (host: keyof typeof hostIds) => {
    const env = { TASK_QUEUE_PREFIX: prefix, WORKER_ID: hostIds[host] };
    const log = path.join(DATA_DIR, 'logs', `${hostIds[host]}-worker.log`);
    workers[host] = await startWorkerProcess(env, log, { detached: true });
  };
  let lastPassId = '';
  const reconcile = async (input: ReconcileInput) => {
    const pass = await reconcilePass(temporal, prefix, input);
    lastPassId = pass.workflowId;
    return pass.result;
  };
  const record = async (workflowId: string, file: string) =>
    fs.writeFileSync(
      path.join(HISTORIES, file),
      historyToJSON(await temporal.workflow.getHandle(workflowId).fetchHistory()),
    );

  beforeAll(async () => {
    await startHost('lost');
    h = await startHarness({ TASK_QUEUE_PREFIX: prefix });
    temporal = createTemporalClient(config);
  }, WORKER_READY_TIMEOUT_MS);
  afterAll(async () => {
    for (const worker of Object.values(workers))
      if (worker.exitCode === null) await killHard(worker);
    await h?.close();
    await temporal?.connection.close();
  });

  it('when its host stays silent past the grace, then a pass tells the run, which ends failed host_lost; the host, back, removes its container', async () => {
    const t = await newTenant(h.pool);
    const api = client(h.service.url, t.key);
    expect(
      (await api.call('PUT', '/api/v1/tenant/quotas', { max_concurrent_runs: 1 })).status,
    ).toBe(200);
    const track = (
      await api.submit({ image: IMAGE, command: ['sleep', '300'], timeout_seconds: 600 })
    ).body.track_id;
    expect((await api.waitFor(track, ['running'], 120_000)).worker_id).toBe(hostIds.lost);
    await startHost('survivor');
    const waiting = (await api.submit({ image: IMAGE, command: ['true'] })).body.track_id;

    await killHard(workers.lost!);
    // Within the grace the host may be restarting: nothing is said.
    expect(await reconcile({ tenantId: t.tenantId, hostLostGraceSeconds: 3600 })).toMatchObject({
      repaired: [],
      hostLost: [],
    });
    const told = await eventually(async () => {
      const pass = await reconcile({ tenantId: t.tenantId, hostLostGraceSeconds: 6 });
      return pass.hostLost!.length > 0 ? pass.hostLost : undefined;
    }, 30_000);
    expect(told).toEqual([
      { trackId: track, workerId: hostIds.lost, silentSeconds: expect.any(Number) as number },
    ]);
    expect(told[0]!.silentSeconds).toBeGreaterThan(6);
    const tellingPass = lastPassId;

    const run = await api.waitFor(track, ['failed'], 60_000);
    expect(run).toMatchObject({ state: 'failed', reason: 'host_lost', exit_code: null });
    expect(run.finished_at).not.toBeNull();
    expect(run.events.filter((e) => e.to_state === 'failed')).toEqual([
      expect.objectContaining({
        from_state: 'running',
        reason: 'host_lost',
        payload: { worker_id: hostIds.lost, silent_seconds: told[0]!.silentSeconds },
      }),
    ]);
    // Its slot is back: the tenant's waiting run runs, on the host still alive.
    expect((await api.waitFor(waiting, ['exited'], 60_000)).worker_id).toBe(hostIds.survivor);
    // The container stays with the lost host, which alone may reach it...
    expect(await containers(track)).toHaveLength(1);
    // ...and whose worker removes it once back.
    await startHost('lost');
    await eventually(async () => ((await containers(track)).length === 0 ? true : undefined));

    if (process.env.RECORD_RUN_HISTORIES === '1') {
      await record(`run/${track}`, 'run-host-lost.one-activity.json');
      await record(tellingPass, 'reconcile-host-lost.json');
    }
  }, 240_000);
});
