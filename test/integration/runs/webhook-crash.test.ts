import path from 'node:path';
import { WORKER_READY_TIMEOUT_MS, killHard, ownWorker } from './own-worker';
import { eventually } from '../../support/services';
import { freePort, startApiProcess } from '../../support/api-process';
import { startHttpsReceiver, type Receiver } from '../../support/https-receiver';
import { DATA_DIR } from '../../support/stack-env';
import { webhookTestEnv } from '../../support/webhook-test-env';
import { client, newTenant, type Harness } from './support';
import { ulid } from 'ulid';
import { sql } from '../../../db/pool';
import { taskQueues } from '../../../contracts/shared/task-queues';

/**
 * At least once, whoever dies mid-attempt: the worker during an attempt of the delivery's
 * workflow, or the API process during the first attempt it makes itself. Either way the
 * delivery ends delivered, every request carrying the one event_id.
 */
describe('a process killed mid-delivery', () => {
  const env = { ...webhookTestEnv(), WEBHOOK_RETRY_DELAYS_SECONDS: '1,1,1,1' };
  const own = ownWorker('hookcrash', env);
  let h: Harness;
  let receiver: Receiver;
  beforeAll(async () => {
    h = await own.start();
  }, WORKER_READY_TIMEOUT_MS);
  afterAll(() => own.stop());
  beforeEach(async () => {
    receiver = await startHttpsReceiver();
  });
  afterEach(() => receiver.close());

  /** A runs API process of this worker's deployment, to kill (the harness's is in this process). */
  const apiOfOwnDeployment = async (name: string) => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const api = await startApiProcess({
      services: ['runs'],
      env: {
        ...process.env,
        ...env,
        TASK_QUEUE_PREFIX: own.queuePrefix,
        RUNS_PORT: String(port),
        RUNS_RETENTION_SCHEDULE: 'false',
      },
      logFile: path.join(DATA_DIR, 'logs', `${own.id}-${name}.log`),
      readyUrls: [`${url}/ping`],
    });
    return { api, url };
  };
  const endpointOf = async (api: ReturnType<typeof client>) =>
    (
      await api.call<{ endpoint_id: string }>('POST', '/api/v1/webhooks', {
        url: `${receiver.url}/hook`,
        events: ['run.terminal'],
      })
    ).body.endpoint_id;
  const tenantKey = async () =>
    (await newTenant(h.pool, { permissions: 'svc_run_read,svc_webhook_admin,svc_webhook_read' }))
      .key;
  const deliveredOnce = async (api: ReturnType<typeof client>, deliveryId: number) => {
    const delivered = await eventually(async () => {
      const d = await api.call<{ state: string; event_id: string }>(
        'GET',
        `/api/v1/webhooks/deliveries/${deliveryId}`,
      );
      return d.body.state === 'delivered' ? d.body : undefined;
    }, 120_000);
    const eventIds = receiver.requests.map((r) => r.headers['x-svc-event-id']);
    expect(eventIds.length).toBeGreaterThanOrEqual(2);
    expect(new Set(eventIds)).toEqual(new Set([delivered.event_id]));
  };

  it('when the worker dies during a retry the workflow makes, then it still delivers, with the same event_id', async () => {
    const api = client(h.service.url, await tenantKey());
    const endpointId = await endpointOf(api);
    // The API's first attempt fails; the workflow's second hangs while its worker dies.
    receiver.respondWith((_request, index) =>
      index === 0 ? { status: 500 } : index === 1 ? 'hang' : { status: 200 },
    );
    const test = await api.call<{ delivery_id: number }>(
      'POST',
      `/api/v1/webhooks/${endpointId}/test`,
    );
    await receiver.waitForRequests(2, 60_000);
    await own.restart();
    await deliveredOnce(api, test.body.delivery_id);
  }, 300_000);

  it('when the API process dies during the first attempt it makes, then the sweeper starts the workflow, which attempts again', async () => {
    const { api, url } = await apiOfOwnDeployment('api');
    const key = await tenantKey();
    const dying = client(url, key);
    const endpointId = await endpointOf(dying);
    receiver.respondWith((_request, index) => (index === 0 ? 'hang' : { status: 200 }));
    const test = await dying.call<{ delivery_id: number }>(
      'POST',
      `/api/v1/webhooks/${endpointId}/test`,
    );
    await receiver.waitForRequests(1, 60_000);
    await killHard(api);
    // The harness's API process (same deployment) sweeps it once the attempt would have ended.
    await deliveredOnce(client(h.service.url, key), test.body.delivery_id);
  }, 300_000);
  it('when the API process and the worker are killed mid-burst, then every event is delivered, and a request sent twice carries the same event_id', async () => {
    const { api, url } = await apiOfOwnDeployment('burst-api');
    const { tenantId, key } = await newTenant(h.pool, {
      permissions: 'svc_webhook_admin,svc_webhook_read',
    });
    const dying = client(url, key);
    for (const path of ['/a', '/b', '/c'])
      await dying.call('POST', '/api/v1/webhooks', {
        url: `${receiver.url}${path}`,
        events: ['timer.fired'],
      });
    // Every tenth request fails once (503), so some deliveries are under their workflow's retry.
    const delivered = new Set<string>();
    receiver.respondWith((request, index) => {
      if (index % 10 === 9) return { status: 503 };
      delivered.add(`${request.path} ${String(request.headers['x-svc-event-id'])}`);
      return { status: 200 };
    });
    const events = await committedNotices(h.pool, tenantId, taskQueues(own.queuePrefix).runs, 200);
    await receiver.waitForRequests(150, 60_000);
    await Promise.all([killHard(api), own.restart()]);

    // The harness's API process (same deployment) adopts what the dead one held.
    await eventually(
      () => Promise.resolve(delivered.size === events.length * 3 ? true : undefined),
      180_000,
    ).catch(async (error: Error) => {
      // What the rows say, so that a failure tells where the deliveries stopped.
      const rows = await h.pool.any(sql.unsafe`
        SELECT state, attempts, workflow_started, dispatch_until < now() AS lapsed,
               count(*)::int AS n, min(delivery_id)::text AS first
        FROM runs.webhook_deliveries WHERE tenant_id = ${tenantId} GROUP BY 1, 2, 3, 4`);
      throw new Error(`${error.message}; ${delivered.size} delivered; ${JSON.stringify(rows)}`);
    });
    for (const path of ['/a', '/b', '/c'])
      for (const event of events) expect(delivered).toContain(`${path} ${event}`);
    const eventOf = new Map<string, string>();
    for (const r of receiver.requests) {
      const id = `${r.path} ${String(r.headers['x-svc-delivery'])}`;
      const event = String(r.headers['x-svc-event-id']);
      expect(eventOf.get(id) ?? event).toBe(event);
      eventOf.set(id, event);
    }
    await eventually(async () => {
      const left = (await h.pool.anyFirst(sql.unsafe`
        SELECT DISTINCT state FROM runs.webhook_deliveries WHERE tenant_id = ${tenantId}`)) as string[];
      return left.length === 1 && left[0] === 'delivered' ? true : undefined;
    }, 60_000);
  }, 300_000);
});

/**
 * The burst: timer.fired notices of the tenant committed at once on the deployment's queue, as
 * that many timers firing together would commit them.
 */
async function committedNotices(
  pool: Harness['pool'],
  tenantId: string,
  queue: string,
  count: number,
) {
  const ids = Array.from({ length: count }, () => ulid());
  await pool.query(sql.unsafe`
    INSERT INTO runs.webhook_notices (event_id, tenant_id, event_type, resource_type, resource_id,
                                      data, workflow_task_queue)
    SELECT id, ${tenantId}, 'timer.fired', 'timer', id,
           jsonb_build_object('timer_id', id, 'labels', '{}'::jsonb, 'payload', NULL), ${queue}
    FROM unnest(${sql.array(ids, 'text')}::text[]) AS e(id)`);
  return ids;
}
