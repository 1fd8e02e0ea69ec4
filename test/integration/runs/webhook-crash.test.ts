import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ulid } from 'ulid';
import { DATA_DIR } from '../../support/stack-env';
import { WORKER_READY_TIMEOUT_MS, startWorkerProcess } from '../../support/worker-process';
import { eventually } from '../../support/services';
import { startHttpsReceiver } from '../../support/https-receiver';
import { webhookTestEnv } from '../../support/webhook-test-env';
import { client, config, newTenant, startHarness, type Harness } from './support';

function killHard(worker: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    worker.once('exit', () => resolve());
    process.kill(-worker.pid!, 'SIGKILL');
  });
}

describe('a worker killed mid-delivery', () => {
  const id = `hookcrash-${ulid().toLowerCase().slice(-10)}`;
  // Under the run's prefix, so the global teardown knows what its worker left as this run's.
  const env = {
    ...webhookTestEnv(),
    TASK_QUEUE_PREFIX: `${config.taskQueuePrefix}${id}-`,
    WORKER_ID: id,
    WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1,1',
  };
  const logFile = path.join(DATA_DIR, 'logs', `${id}-worker.log`);
  let h: Harness;
  let worker: ChildProcess | undefined;
  beforeAll(async () => {
    worker = await startWorkerProcess(env, logFile, { detached: true });
    h = await startHarness(env);
  }, WORKER_READY_TIMEOUT_MS);
  afterAll(async () => {
    if (worker && worker.exitCode === null) await killHard(worker);
    await h?.close();
  });

  it('still delivers, at least once, with the same event_id', async () => {
    const receiver = await startHttpsReceiver();
    try {
      const { key } = await newTenant(h.pool, {
        permissions: 'svc_run_read,svc_webhook_admin,svc_webhook_read',
      });
      const api = client(h.service.url, key);
      const endpoint = await api.call<{ endpoint_id: string }>('POST', '/api/v1/webhooks', {
        url: `${receiver.url}/hook`,
        events: ['run.terminal'],
      });
      // The first request hangs: the attempt is in flight when its worker dies.
      receiver.respondWith((_request, index) => (index === 0 ? 'hang' : { status: 200 }));
      const test = await api.call<{ delivery_id: number }>(
        'POST',
        `/api/v1/webhooks/${endpoint.body.endpoint_id}/test`,
      );
      await receiver.waitForRequests(1, 60_000);
      await killHard(worker!);
      worker = await startWorkerProcess(env, logFile, { detached: true });

      const delivered = await eventually(async () => {
        const d = await api.call<{ state: string; event_id: string }>(
          'GET',
          `/api/v1/webhooks/deliveries/${test.body.delivery_id}`,
        );
        return d.body.state === 'delivered' ? d.body : undefined;
      }, 120_000);
      const eventIds = receiver.requests.map((r) => r.headers['x-svc-event-id']);
      expect(eventIds.length).toBeGreaterThanOrEqual(2);
      expect(new Set(eventIds)).toEqual(new Set([delivered.event_id]));
    } finally {
      await receiver.close();
    }
  }, 300_000);
});
