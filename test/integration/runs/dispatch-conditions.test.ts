import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ulid } from 'ulid';
import { createRunActivities } from '../../../activities/runs/run';
import { sql } from '../../../db/pool';
import { DATA_DIR } from '../../support/stack-env';
import { WORKER_READY_TIMEOUT_MS, startWorkerProcess } from '../../support/worker-process';
import { IMAGE, client, config, newTenant, startHarness, type Harness } from './support';

function stopWorker(worker: ChildProcess): Promise<void> {
  if (worker.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    worker.once('close', () => resolve());
    worker.kill('SIGTERM');
  });
}

/** The spec's scheduled → queued condition beyond the slot: "slot and worker free", within working hours. */
describe('a due run takes a slot only when a Docker host is alive and within its working hours', () => {
  const id = `hosts-${ulid().toLowerCase().slice(-10)}`;
  // Under the run's prefix, so the global teardown knows what these workers left as this run's.
  const prefix = { TASK_QUEUE_PREFIX: `${config.taskQueuePrefix}${id}-` };
  const logFile = (name: string) => path.join(DATA_DIR, 'logs', `${id}-${name}.log`);
  const workers: ChildProcess[] = [];
  let h: Harness;
  beforeAll(async () => {
    // Hosts the run workflows of this prefix, and no Docker queue: no Docker host is alive.
    workers.push(
      await startWorkerProcess(
        { ...prefix, WORKER_ID: `${id}-wf`, RUNS_DOCKER_HOST: 'false' },
        logFile('workflows'),
      ),
    );
    h = await startHarness(prefix);
  }, WORKER_READY_TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all(workers.map(stopWorker));
    await h?.close();
  });

  const tenantWithQueueSeconds = async (seconds: number) => {
    const api = client(h.service.url, (await newTenant(h.pool)).key);
    await api.call('PUT', '/api/v1/tenant/quotas', { max_queue_seconds: seconds });
    return api;
  };
  const states = (run: { events: Record<string, unknown>[] }) => run.events.map((e) => e.to_state);

  it('when no Docker host is alive, then runs wait scheduled holding no slot and fail queue_timeout past max_queue_seconds; once a host is alive, a waiting run runs', async () => {
    const short = await tenantWithQueueSeconds(3);
    const long = await tenantWithQueueSeconds(300);
    const timedOut = (await short.submit({ image: IMAGE, command: ['true'] })).body.track_id;
    const waiting = (await long.submit({ image: IMAGE, command: ['true'] })).body.track_id;
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const meanwhile = (await long.status(waiting)).body;
    expect(meanwhile).toMatchObject({ state: 'scheduled', worker_id: null });
    expect(meanwhile.scheduling_info).toMatchObject({ queue_position: 1 });

    const failed = await short.waitFor(timedOut, ['failed'], 30_000);
    expect(failed).toMatchObject({ reason: 'queue_timeout', worker_id: null, container_id: null });
    expect(states(failed)).toEqual(['scheduled', 'failed']);
    expect(states((await long.status(waiting)).body)).toEqual(['scheduled']);

    workers.push(
      await startWorkerProcess({ ...prefix, WORKER_ID: `${id}-docker` }, logFile('docker')),
    );
    const ran = await long.waitFor(waiting, ['exited'], 60_000);
    expect(states(ran)).toEqual(['scheduled', 'queued', 'pulling', 'running', 'exited']);
    expect(ran.worker_id).toBe(`${id}-docker`);
  }, 180_000);

  it('when a waiting run asks for a slot outside the working hours it was accepted under, then it is told when they begin and takes no slot', async () => {
    const { tenantId, key } = await newTenant(h.pool);
    const api = client(h.service.url, key);
    // Deferred, so its own workflow does not ask meanwhile; the activity is asked directly.
    const { track_id } = (
      await api.submit({ image: IMAGE, scheduled_start: '2999-01-01T00:00:00Z' })
    ).body;
    const opens = new Date(Date.now() + 12 * 3600_000);
    const hhmm = (d: Date) => `${d.getUTCHours()}:${String(d.getUTCMinutes()).padStart(2, '0')}`;
    const closes = hhmm(new Date(opens.getTime() + 60_000));
    const onlyThen = `workinghours sun - sat ${hhmm(opens)} - ${closes === '0:00' ? '24:00' : closes}`;
    const answer = await createRunActivities({ pool: h.pool, metering: null }).takeRunSlot({
      trackId: track_id,
      eventId: ulid(),
      maxConcurrent: null,
      workingHoursTjp: onlyThen,
    });
    const minute = new Date(Math.floor(opens.getTime() / 60_000) * 60_000).toISOString();
    expect(answer).toEqual({ outsideWorkingHoursUntil: minute });
    expect(
      await h.pool.oneFirst(
        sql.unsafe`SELECT state FROM runs.runs WHERE tenant_id = ${tenantId} AND track_id = ${track_id}`,
      ),
    ).toBe('scheduled');
  });
});
