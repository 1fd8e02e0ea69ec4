/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment -- JSON replies in tests */
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { loadConfig } from '../../../platform/config';
import { sql } from '../../../db/pool';
import { withSystem } from '../../../db/ledger/context';
import {
  createPostingBatcher,
  createTransaction,
  type PostingBatcher,
} from '../../../services/ledger/transactions';
import { readDueHolds, type DueHold } from '../../../db/ledger/transactions';
import { holdSweepScheduleId, holdWorkflowId } from '../../../contracts/ledger/hold';
import { eventually } from '../../support/services';
import { LedgerHarness, type TenantClients } from './support';
import { createTemporalClient } from '../../../platform/temporal';
import { HoldDispatcher } from '../../../services/ledger/holds';
import { createLogger } from '../../../platform/logger';
import { createDatabasePool } from '../../../db/pool';

jest.setTimeout(120_000);

describe('ledger holds that expire on Temporal', () => {
  const h = new LedgerHarness();
  const config = loadConfig();
  let temporal: Client;
  let t: TenantClients;
  let usd: string;
  let cash: string;
  /** The service's posting path on the test's own pool, past the API (its own batcher). */
  let postings: PostingBatcher;
  beforeAll(async () => {
    await h.start({
      LEDGER_HOLD_SWEEP_SCHEDULE: 'true',
      LEDGER_HOLD_SWEEP_INTERVAL_SECONDS: '3600',
    });
    postings = createPostingBatcher(h.pool);
    temporal = createTemporalClient(config);
    t = await h.tenant();
    usd = await h.assetType(t);
    cash = await h.account(t, usd, { normal_side: 'debit', balance_floor: null });
  });
  afterAll(async () => {
    await temporal?.schedule
      .getHandle(holdSweepScheduleId(config.taskQueuePrefix))
      .delete()
      .catch(() => undefined);
    await temporal?.connection.close();
    await h.stop();
  });

  const funded = async (amount: string) => {
    const id = await h.account(t, usd, { normal_side: 'credit' });
    await t.poster.post('/v1/transactions', {
      entries: [
        { account_id: cash, direction: 'debit', amount },
        { account_id: id, direction: 'credit', amount },
      ],
    });
    return id;
  };
  const holdBody = (from: string, to: string, amount: string, expiresInMs: number) => ({
    pending: true,
    expires_at: new Date(Date.now() + expiresInMs).toISOString(),
    entries: [
      { account_id: from, direction: 'debit', amount },
      { account_id: to, direction: 'credit', amount },
    ],
  });
  const state = async (id: string) =>
    (await t.reader.get(`/v1/transactions/${id}`)).body.state as string;

  it('when a hold reaches its expires_at, then its workflow ledger-hold/<id> expires it by itself and the funds are released', async () => {
    const a = await funded('5.00');
    const hold = await t.poster.post('/v1/transactions', holdBody(a, cash, '5.00', 3_000));
    expect(hold.status).toBe(201);
    const id = hold.body.transaction_id as string;
    const handle = temporal.workflow.getHandle(holdWorkflowId(id));
    const description = await eventually(() => handle.describe().catch(() => undefined), 10_000);
    expect(description.searchAttributes).toMatchObject({
      TenantId: [t.tenantId],
      Service: ['ledger'],
    });
    expect(await handle.result()).toBe('expired');
    expect(await state(id)).toBe('expired');
    expect((await t.reader.get(`/v1/accounts/${a}/balance`)).body).toMatchObject({
      available: '5.00',
      pending: { debits: '0.00' },
    });
    const outbox = await withSystem(h.pool, (tx) =>
      tx.one(
        sql.unsafe`SELECT attempts, dispatched_at FROM ledger.hold_outbox WHERE transaction_id = ${id}`,
      ),
    );
    expect(outbox.dispatched_at).not.toBeNull();
    expect((await t.poster.post(`/v1/transactions/${id}/commit`)).body.error.code).toBe(
      'HOLD_EXPIRED',
    );

    const history = await handle.fetchHistory();
    const dir = path.join(__dirname, '../../histories/ledger');
    if (process.env.RECORD_HISTORIES === '1') {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'hold-expired.json'), historyToJSON(history));
    }
  });

  it('when a hold is committed or voided, then its workflow ends early (settled) without expiring anything', async () => {
    for (const action of ['commit', 'void'] as const) {
      const a = await funded('2.00');
      const hold = await t.poster.post('/v1/transactions', holdBody(a, cash, '2.00', 3_600_000));
      const id = hold.body.transaction_id as string;
      const handle = temporal.workflow.getHandle(holdWorkflowId(id));
      await eventually(() => handle.describe().catch(() => undefined), 10_000);
      expect((await t.poster.post(`/v1/transactions/${id}/${action}`)).status).toBe(200);
      expect(await handle.result()).toBe('settled');
      expect(await state(id)).toBe(action === 'commit' ? 'committed' : 'voided');
      if (action === 'commit' && process.env.RECORD_HISTORIES === '1') {
        fs.writeFileSync(
          path.join(__dirname, '../../histories/ledger/hold-settled.json'),
          historyToJSON(await handle.fetchHistory()),
        );
      }
    }
  });

  it('when an account of a hold is frozen and the hold reaches its expires_at, then its workflow still expires it and the funds are released (frozen blocks commits, not expiries)', async () => {
    const a = await funded('4.00');
    const hold = await t.poster.post('/v1/transactions', holdBody(a, cash, '4.00', 3_000));
    expect(hold.status).toBe(201);
    const id = hold.body.transaction_id as string;
    expect((await t.admin.patch(`/v1/accounts/${a}`, { status: 'frozen' })).status).toBe(200);
    expect(await temporal.workflow.getHandle(holdWorkflowId(id)).result()).toBe('expired');
    expect(await state(id)).toBe('expired');
    expect((await t.reader.get(`/v1/accounts/${a}/balance`)).body).toMatchObject({
      available: '4.00',
      pending: { debits: '0.00' },
    });
    expect((await t.reader.get(`/v1/accounts/${a}`)).body.status).toBe('frozen');
  });

  it('when a hold was recorded but its workflow never started, then the outbox dispatcher starts it', async () => {
    const a = await funded('1.00');
    // Written straight through the service (as if the process died right after COMMIT).
    const created = await createTransaction(
      postings,
      t.tenantId,
      holdBody(a, cash, '1.00', 3_600_000),
    );
    const handle = temporal.workflow.getHandle(holdWorkflowId(created.transaction_id));
    const running = await eventually(() => handle.describe().catch(() => undefined), 15_000);
    expect(running.status.name).toBe('RUNNING');
    await t.poster.post(`/v1/transactions/${created.transaction_id}/void`);
    expect(await handle.result()).toBe('settled');
  });

  it("when a hold is written by a process of another task-queue prefix (another test run), then this run's ledger leaves it alone and one of that prefix starts it", async () => {
    const other = { ...config, taskQueuePrefix: `${config.taskQueuePrefix}other-` };
    const otherPool = await createDatabasePool(other, { applicationName: 'holds-other-run' });
    const a = await funded('1.00');
    const created = await createTransaction(
      createPostingBatcher(otherPool),
      t.tenantId,
      holdBody(a, cash, '1.00', 3_600_000),
    );
    const outbox = () =>
      withSystem(h.pool, (tx) =>
        tx.one(
          sql.unsafe`SELECT task_queue_prefix, attempts, dispatched_at FROM ledger.hold_outbox WHERE transaction_id = ${created.transaction_id}`,
        ),
      );
    // This run's ledger API sweeps every second.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await outbox()).toEqual({
      task_queue_prefix: other.taskQueuePrefix,
      attempts: 0,
      dispatched_at: null,
    });
    const dispatcher = new HoldDispatcher({
      pool: otherPool,
      temporal,
      config: other,
      logger: createLogger('silent'),
    });
    try {
      await dispatcher.sweep();
      await dispatcher.stop();
      expect(await outbox()).toMatchObject({ attempts: 1, dispatched_at: expect.any(String) });
      const handle = temporal.workflow.getHandle(holdWorkflowId(created.transaction_id));
      expect((await handle.describe()).taskQueue).toBe(`${other.taskQueuePrefix}ledger`);
      await handle.terminate("test done: no worker polls the other run's queue");
    } finally {
      await otherPool.end();
    }
  });

  it('the sweep reads due holds oldest first and pages after a hold: only holds behind it come next', async () => {
    const a = await funded('2.00');
    const first = await createTransaction(postings, t.tenantId, holdBody(a, cash, '1.00', 300));
    const second = await createTransaction(postings, t.tenantId, holdBody(a, cash, '1.00', 600));
    const ids = [first.transaction_id, second.transaction_id];
    // Lost to Temporal, so that nothing but a sweep expires them.
    await withSystem(h.pool, (tx) =>
      tx.query(
        sql.unsafe`UPDATE ledger.hold_outbox SET dispatched_at = now() WHERE transaction_id = ANY(${sql.array(ids, 'uuid')})`,
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 900));
    const page = async (after: DueHold | null) =>
      withSystem(h.pool, (tx) => readDueHolds(tx, after, 100_000));
    const due = await page(null);
    const at = (id: string) => due.findIndex((d) => d.transaction_id === id);
    expect(at(first.transaction_id)).toBeGreaterThanOrEqual(0);
    expect(at(second.transaction_id)).toBeGreaterThan(at(first.transaction_id));
    const afterFirst = (await page(due[at(first.transaction_id)]!)).map((d) => d.transaction_id);
    expect(afterFirst).not.toContain(first.transaction_id);
    expect(afterFirst).toContain(second.transaction_id);
    const afterSecond = (await page(due[at(second.transaction_id)]!)).map((d) => d.transaction_id);
    expect(afterSecond).not.toContain(second.transaction_id);
    expect(afterSecond).not.toContain(first.transaction_id);
  });

  it('when a hold has no workflow at all and passes its expiry, then the sweep schedule expires it', async () => {
    const a = await funded('1.00');
    const created = await createTransaction(postings, t.tenantId, holdBody(a, cash, '1.00', 500));
    // Lost to Temporal: the outbox says dispatched but no workflow exists.
    await withSystem(h.pool, (tx) =>
      tx.query(
        sql.unsafe`UPDATE ledger.hold_outbox SET dispatched_at = now() WHERE transaction_id = ${created.transaction_id}`,
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const schedule = temporal.schedule.getHandle(holdSweepScheduleId(config.taskQueuePrefix));
    const described = await eventually(() => schedule.describe().catch(() => undefined), 10_000);
    expect(described.action).toMatchObject({ workflowType: 'ledgerHoldSweepWorkflow' });
    await schedule.trigger();
    await eventually(
      async () => ((await state(created.transaction_id)) === 'expired' ? true : undefined),
      30_000,
    );
    expect((await t.reader.get(`/v1/accounts/${a}/balance`)).body.available).toBe('1.00');
  });
});
