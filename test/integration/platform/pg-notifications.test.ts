import { ulid } from 'ulid';
import { createDatabasePool, sql, type DatabasePool } from '../../../db/pool';
import { loadConfig } from '../../../platform/config';
import { createLogger } from '../../../platform/logger';
import { listenForNotifications } from '../../../platform/pg-notifications';
import { runAdmin } from '../../../cli/runs';
import { eventually } from '../../support/services';

/**
 * The publishers' wake-up: a committed webhook event of a tenant with a webhook notifies
 * runs_webhook_events with its tenant id (runs/0016, 0018), another tenant's none; and a listener
 * keeps listening across the loss of its connection.
 */
describe('Postgres notifications', () => {
  const config = loadConfig();
  let pool: DatabasePool;
  beforeAll(async () => {
    pool = await createDatabasePool(config, { applicationName: 'notify-test', maximumPoolSize: 2 });
  });
  afterAll(() => pool.end());

  /** `heard`: notifications so far, with this payload when one is given (other tests notify too). */
  const listen = (channel: string, applicationName: string) => {
    const payloads: (string | undefined)[] = [];
    const listener = listenForNotifications({
      databaseUrl: config.databaseUrl,
      channel,
      applicationName,
      onNotify: (payload) => payloads.push(payload),
      logger: createLogger('silent'),
    });
    const heard = (payload?: string) =>
      payload === undefined ? payloads.length : payloads.filter((p) => p === payload).length;
    return { listener, heard };
  };
  const tenant = async (withEndpoint: boolean) => {
    const tenantId = `t-${ulid().toLowerCase()}`;
    await runAdmin(['tenant', 'create', tenantId], pool);
    if (withEndpoint)
      await pool.query(sql.unsafe`
        INSERT INTO runs.webhook_endpoints (endpoint_id, tenant_id, url, events, secret, secret_origin)
        VALUES (${ulid()}, ${tenantId}, 'https://receiver.invalid/hook', '{timer.fired}', 's', 'supplied')`);
    return tenantId;
  };
  const notice = (db: Pick<DatabasePool, 'query'>, tenantId: string) =>
    db.query(sql.unsafe`
      INSERT INTO runs.webhook_notices (event_id, tenant_id, event_type, resource_type,
                                        resource_id, data, workflow_task_queue)
      VALUES (${ulid()}, ${tenantId}, 'timer.fired', 'timer', 'notify-test', '{}',
              'notify-test-no-publisher')`);

  it('when a webhook notice of a tenant with a webhook commits, then a listener hears its tenant id at the commit, not before; a tenant without one is not heard', async () => {
    const subscribed = await tenant(true);
    const silent = await tenant(false);
    const { listener, heard } = listen('runs_webhook_events', `notify-test-${ulid()}`);
    try {
      await eventually(() => Promise.resolve(heard() >= 1 ? true : undefined)); // connected
      await notice(pool, silent);
      await pool.transaction(async (tx) => {
        await notice(tx, subscribed);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(heard(subscribed)).toBe(0);
      });
      await eventually(() => Promise.resolve(heard(subscribed) === 1 ? true : undefined));
      // Notifications arrive in commit order: the silent tenant's came first, or never.
      expect(heard(silent)).toBe(0);
    } finally {
      await listener.close();
      for (const tenantId of [subscribed, silent])
        await pool.query(
          sql.unsafe`DELETE FROM runs.webhook_notices WHERE tenant_id = ${tenantId}`,
        );
    }
  });

  it('when its connection is cut, then it listens again, and hears what comes after', async () => {
    const name = `notify-test-${ulid()}`;
    const { listener, heard } = listen('notify_test_channel', name);
    try {
      await eventually(() => Promise.resolve(heard() >= 1 ? true : undefined));
      await pool.query(sql.unsafe`
        SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ${name}`);
      // Back: it says so once (what was sent meanwhile is lost), then hears the next one.
      await eventually(() => Promise.resolve(heard() >= 2 ? true : undefined));
      const back = heard();
      await pool.query(sql.unsafe`SELECT pg_notify('notify_test_channel', '')`);
      await eventually(() => Promise.resolve(heard() > back ? true : undefined));
    } finally {
      await listener.close();
    }
  });
});
