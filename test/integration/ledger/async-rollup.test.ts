/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment -- JSON replies in tests */
import { loadConfig } from '../../../platform/config';
import { createDatabasePool, sql, type DatabasePool } from '../../../db/pool';
import { withSystem } from '../../../db/ledger/context';
import { drainAsyncBalances, rollupAsyncBalances } from '../../../db/ledger/accounts';
import {
  createPostingBatcher,
  createTransaction,
  settleTransaction,
} from '../../../services/ledger/transactions';
import { runCommand } from '../../../cli/ledger';
import { eventually } from '../../support/services';
import {
  asyncDrift,
  drainTenant,
  LedgerHarness,
  queuedDeltas,
  type TenantClients,
} from './support';

jest.setTimeout(120_000);

/**
 * Async accounts advance from a queue of balance deltas written with the journal (migration
 * 0008) and consumed by every API process's rollup. The service under test runs its own
 * rollup every second, as do other test files' services: these tests hold whatever the
 * interleaving, because they check the journal against balance plus queue in one snapshot.
 */
describe('async balances from the delta queue', () => {
  const h = new LedgerHarness();
  let t: TenantClients, usd: string, cash: string;
  beforeAll(async () => ({ t, usd, cash } = await h.startWithCash()));
  afterAll(() => h.stop());

  const balance = async (id: string) => (await t.reader.get(`/v1/accounts/${id}/balance`)).body;
  const dbNow = async () =>
    Date.parse(String(await h.pool.oneFirst(sql.unsafe`SELECT ledger.now_ms()`)));

  /**
   * Polls the balance until it shows `expected`; every reply on the way must keep the as_of
   * promise: when as_of is later than `acknowledgedBefore` (a database instant read after the
   * change was acknowledged), the change is in the counters.
   */
  async function settlesTo(
    id: string,
    expected: Record<string, string>,
    acknowledgedBefore: number,
  ): Promise<Record<string, unknown>> {
    return eventually(async () => {
      const b = await balance(id);
      const shown = {
        posted_debits: b.posted.debits,
        posted_credits: b.posted.credits,
        pending_debits: b.pending.debits,
        pending_credits: b.pending.credits,
        available: b.available,
      };
      const matches = Object.entries(expected).every(
        ([k, v]) => shown[k as keyof typeof shown] === v,
      );
      if (Date.parse(b.as_of as string) > acknowledgedBefore) expect(shown).toMatchObject(expected);
      return matches ? b : undefined;
    }, 15_000);
  }

  const hold = async (account: string, amount: string, expiresInMs = 3_600_000) => {
    const reply = await t.poster.post('/v1/transactions', {
      pending: true,
      expires_at: new Date(Date.now() + expiresInMs).toISOString(),
      entries: [
        { account_id: account, direction: 'debit', amount },
        { account_id: cash, direction: 'credit', amount },
      ],
    });
    expect(reply.status).toBe(201);
    return reply.body.transaction_id as string;
  };

  it('when a hold on an async account is placed and committed, then pending moves first and then posted; void and expiry release it', async () => {
    const lagging = await h.account(t, usd, { balance_tracking: 'async' });

    const committed = await hold(lagging, '3.00');
    await settlesTo(
      lagging,
      { pending_debits: '3.00', posted_debits: '0.00', available: '0.00' },
      await dbNow(),
    );
    expect((await t.poster.post(`/v1/transactions/${committed}/commit`)).body.state).toBe(
      'committed',
    );
    const afterCommit = await settlesTo(
      lagging,
      { pending_debits: '0.00', posted_debits: '3.00', available: '3.00' },
      await dbNow(),
    );
    expect(afterCommit.balance_tracking).toBe('async');

    const voided = await hold(lagging, '2.00');
    await settlesTo(lagging, { pending_debits: '2.00', posted_debits: '3.00' }, await dbNow());
    expect((await t.poster.post(`/v1/transactions/${voided}/void`)).body.state).toBe('voided');
    await settlesTo(
      lagging,
      { pending_debits: '0.00', posted_debits: '3.00', available: '3.00' },
      await dbNow(),
    );

    // Long enough for the rollup to show the hold before it expires (its +4.00 and the expiry's
    // -4.00 applied in one tick would never show 4.00 pending); then past its expires_at.
    const placedAt = Date.now();
    const expiring = await hold(lagging, '4.00', 3_000);
    await settlesTo(lagging, { pending_debits: '4.00' }, await dbNow());
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, placedAt + 3_200 - Date.now())));
    // Commit after expires_at expires the hold in the same transaction (410); the expiry path
    // is the one the hold workflow and the sweep take.
    const late = await t.poster.post(`/v1/transactions/${expiring}/commit`);
    expect(late.status).toBe(410);
    await settlesTo(
      lagging,
      { pending_debits: '0.00', posted_debits: '3.00', available: '3.00' },
      await dbNow(),
    );
    expect(await asyncDrift(h.pool, t.tenantId)).toEqual([]);
  });

  it('when two rollups in separate pools run concurrently with postings and settlements, then every delta is applied exactly once; a consumer that dies mid-batch loses nothing', async () => {
    const config = loadConfig();
    const pools: DatabasePool[] = await Promise.all(
      ['rollup-a', 'rollup-b', 'rollup-crash'].map((name) =>
        createDatabasePool(config, { applicationName: name, maximumPoolSize: 2 }),
      ),
    );
    try {
      const accounts: string[] = [];
      for (let i = 0; i < 6; i++)
        accounts.push(await h.account(t, usd, { balance_tracking: 'async' }));
      const applied = [0, 0];
      let posting = true;
      const consumers = pools.slice(0, 2).map(async (pool, i) => {
        while (posting) {
          // Small batches: many claims, so the two consumers meet on the same accounts.
          applied[i] = (applied[i] ?? 0) + (await rollupAsyncBalances(pool, 3)).deltas;
        }
      });
      // A consumer whose transaction dies after taking a batch: nothing it took may be lost.
      const crasher = (async () => {
        while (posting) {
          await pools[2]!
            .transaction(async (tx) => {
              await tx.query(sql.unsafe`SELECT * FROM ledger.rollup_async_balances(5)`);
              throw new Error('consumer crashed');
            })
            .catch(() => undefined);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();

      const work = Array.from({ length: 240 }, (_, n) => n);
      // Posted past the API, on the test's pool: concurrent postings of the tenant batch together.
      const postings = createPostingBatcher(h.pool);
      let drifts = 0;
      await Promise.all(
        Array.from({ length: 8 }, async (_, worker) => {
          for (const n of work.filter((x) => x % 8 === worker)) {
            const account = accounts[n % accounts.length]!;
            const other = accounts[(n * 7 + 1) % accounts.length]!;
            const cents = 1 + ((n * 7919) % 997);
            const amount = `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
            const pending = n % 3 === 0;
            const created = await createTransaction(postings, t.tenantId, {
              ...(pending
                ? { pending: true, expires_at: new Date(Date.now() + 3_600_000).toISOString() }
                : {}),
              entries: [
                { account_id: account, direction: 'debit', amount },
                { account_id: other === account ? cash : other, direction: 'credit', amount },
              ],
            });
            if (pending)
              await settleTransaction(
                h.pool,
                t.tenantId,
                created.transaction_id,
                n % 2 === 0 ? 'commit' : 'void',
              );
            if (n % 40 === 0) drifts += (await asyncDrift(h.pool, t.tenantId)).length;
          }
        }),
      );
      posting = false;
      await Promise.all([...consumers, crasher]);
      expect(drifts).toBe(0);
      expect(applied[0]).toBeGreaterThan(0);
      expect(applied[1]).toBeGreaterThan(0);

      await drainTenant(h.pool, t.tenantId);
      expect(await asyncDrift(h.pool, t.tenantId)).toEqual([]);
      // With the queue drained, the rows themselves equal the journal, and as_of is now.
      const before = await dbNow();
      for (const id of accounts) {
        const b = await balance(id);
        expect(Date.parse(b.as_of as string)).toBeGreaterThanOrEqual(before);
      }
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it('when an async balance row has drifted, then `ledger-admin balances rebuild` recomputes it from the journal and reports it', async () => {
    const a = await h.account(t, usd, { balance_tracking: 'async' });
    const reply = await t.poster.post('/v1/transactions', {
      entries: [
        { account_id: a, direction: 'debit', amount: '7.00' },
        { account_id: cash, direction: 'credit', amount: '7.00' },
      ],
    });
    expect(reply.status).toBe(201);
    await drainTenant(h.pool, t.tenantId);
    await withSystem(h.pool, (tx) =>
      tx.query(
        sql.unsafe`UPDATE ledger.balances SET posted_debits = posted_debits + 999 WHERE account_id = ${a}`,
      ),
    );
    expect(await asyncDrift(h.pool, t.tenantId)).toEqual([a]);
    // A delta queued at rebuild time is in the journal sums already: dropped, not re-applied.
    await hold(a, '1.00');
    const { json } = await runCommand(h.pool, 'balances rebuild', { tenant: t.tenantId });
    expect(json).toMatchObject({ drifted: 1 });
    expect((json as { accounts: number }).accounts).toBeGreaterThanOrEqual(1);
    expect(await asyncDrift(h.pool, t.tenantId)).toEqual([]);
    await drainAsyncBalances(h.pool, 1_000);
    expect(await queuedDeltas(h.pool, t.tenantId)).toBe(0);
    expect(await balance(a)).toMatchObject({
      posted: { debits: '7.00' },
      pending: { debits: '1.00' },
    });
  });
});
