import { ulid } from 'ulid';
import { createDatabasePool, sql, type DatabasePool } from '../../../db/pool';
import { loadConfig } from '../../../platform/config';
import { createLogger } from '../../../platform/logger';
import { listenForNotifications } from '../../../platform/pg-notifications';
import { runAdmin } from '../../../api/runs/cli';
import { eventually } from '../../support/services';

/**
 * The publishers' wake-up: a committed webhook event notifies runs_webhook_events (runs/0016),
 * and a listener keeps listening across the loss of its connection.
 */
describe('Postgres notifications', () => {
  const config = loadConfig();
  let pool: DatabasePool;
  beforeAll(async () => {
    pool = await createDatabasePool(config, { applicationName: 'notify-test', maximumPoolSize: 2 });
  });
  afterAll(() => pool.end());

  const listen = (channel: string, applicationName: string) => {
    let heard = 0;
    const listener = listenForNotifications({
      databaseUrl: config.databaseUrl,
      channel,
      applicationName,
      onNotify: () => heard++,
      logger: createLogger('silent'),
    });
    return { listener, heard: () => heard };
  };

  it('when a webhook notice commits, then a listener of runs_webhook_events hears it at the commit, not before', async () => {
    const tenantId = `t-${ulid().toLowerCase()}`;
    await runAdmin(['tenant', 'create', tenantId], pool);
    const { listener, heard } = listen('runs_webhook_events', `notify-test-${ulid()}`);
    try {
      await eventually(() => Promise.resolve(heard() >= 1 ? true : undefined)); // connected
      const before = heard();
      await pool.transaction(async (tx) => {
        await tx.query(sql.unsafe`
          INSERT INTO runs.webhook_notices (event_id, tenant_id, event_type, resource_type,
                                            resource_id, data, workflow_task_queue)
          VALUES (${ulid()}, ${tenantId}, 'timer.fired', 'timer', 'notify-test', '{}',
                  'notify-test-no-publisher')`);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(heard()).toBe(before);
      });
      await eventually(() => Promise.resolve(heard() > before ? true : undefined));
    } finally {
      await listener.close();
      await pool.query(sql.unsafe`DELETE FROM runs.webhook_notices WHERE tenant_id = ${tenantId}`);
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
