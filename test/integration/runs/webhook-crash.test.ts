import { WORKER_READY_TIMEOUT_MS, ownWorker } from './own-worker';
import { eventually } from '../../support/services';
import { startHttpsReceiver } from '../../support/https-receiver';
import { webhookTestEnv } from '../../support/webhook-test-env';
import { client, newTenant, type Harness } from './support';

describe('a worker killed mid-delivery', () => {
  const own = ownWorker('hookcrash', {
    ...webhookTestEnv(),
    WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1,1',
  });
  let h: Harness;
  beforeAll(async () => {
    h = await own.start();
  }, WORKER_READY_TIMEOUT_MS);
  afterAll(() => own.stop());

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
      await own.restart();

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
