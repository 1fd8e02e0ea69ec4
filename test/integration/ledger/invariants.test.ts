/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment -- JSON replies in tests */
import fc from 'fast-check';
import { sql } from '../../../db/pool';
import { withTenant } from '../../../db/ledger/context';
import { asyncDrift, drainTenant, LedgerHarness, newKey, type TenantClients } from './support';

jest.setTimeout(180_000);

const WALLETS = 6;

type Op =
  | {
      kind: 'transfer';
      from: number;
      to: number;
      cents: number;
      pending: boolean;
      settle: 'commit' | 'void' | 'none';
      /** effective_at this many ms before now (backdated, over minute and day boundaries). */
      backdateMs: number | null;
    }
  | { kind: 'duplicate'; to: number; cents: number; copies: number };

const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('transfer' as const),
    from: fc.integer({ min: 0, max: WALLETS - 1 }),
    to: fc.integer({ min: 0, max: WALLETS - 1 }),
    cents: fc.integer({ min: 1, max: 4_000 }),
    pending: fc.boolean(),
    settle: fc.constantFrom('commit' as const, 'void' as const, 'none' as const),
    backdateMs: fc.option(fc.integer({ min: 0, max: 3 * 86_400_000 }), { nil: null }),
  }),
  fc.record({
    kind: fc.constant('duplicate' as const),
    to: fc.integer({ min: 0, max: WALLETS - 1 }),
    cents: fc.integer({ min: 1, max: 500 }),
    copies: fc.integer({ min: 2, max: 5 }),
  }),
);

const amount = (cents: number) =>
  `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;

/**
 * Many parallel clients post random transfers (posted and held, committed or voided) between
 * wallets with floors, plus duplicate requests under one key; afterwards the ledger's
 * invariants hold in the database itself.
 */
describe('ledger invariants under concurrency (fast-check)', () => {
  const h = new LedgerHarness();
  beforeAll(() => h.start());
  afterAll(() => h.stop());

  async function scenario(t: TenantClients, ops: Op[]) {
    const usd = await h.assetType(t);
    const cash = await h.account(t, usd, { balance_floor: null });
    const wallets: string[] = [];
    // The last wallet is async (no floor, never locked, advanced by the rollup).
    for (let i = 0; i < WALLETS; i++)
      wallets.push(
        await h.account(
          t,
          usd,
          i === WALLETS - 1
            ? { normal_side: 'credit', balance_tracking: 'async' }
            : { normal_side: 'credit', balance_floor: i % 2 === 0 ? '0' : '5.00' },
        ),
      );
    for (const w of wallets) {
      await t.poster.post('/v1/transactions', {
        entries: [
          { account_id: cash, direction: 'debit', amount: '50.00' },
          { account_id: w, direction: 'credit', amount: '50.00' },
        ],
      });
    }
    const duplicateKeys: { key: string; to: string }[] = [];
    await Promise.all(
      ops.map(async (op) => {
        if (op.kind === 'duplicate') {
          const key = newKey();
          const to = wallets[op.to]!;
          duplicateKeys.push({ key, to });
          const body = {
            external_id: key,
            entries: [
              { account_id: cash, direction: 'debit', amount: amount(op.cents) },
              { account_id: to, direction: 'credit', amount: amount(op.cents) },
            ],
          };
          await Promise.all(
            Array.from({ length: op.copies }, () => t.poster.post('/v1/transactions', body, key)),
          );
          return;
        }
        const body: Record<string, unknown> = {
          entries: [
            { account_id: wallets[op.from], direction: 'debit', amount: amount(op.cents) },
            { account_id: wallets[op.to], direction: 'credit', amount: amount(op.cents) },
          ],
        };
        if (op.backdateMs !== null)
          body.effective_at = new Date(Date.now() - op.backdateMs).toISOString();
        if (op.pending)
          Object.assign(body, {
            pending: true,
            expires_at: new Date(Date.now() + 3_600_000).toISOString(),
          });
        const reply = await t.poster.post('/v1/transactions', body);
        expect([201, 422, 409]).toContain(reply.status);
        if (reply.status === 201 && op.pending && op.settle !== 'none') {
          await t.poster.post(`/v1/transactions/${reply.body.transaction_id}/${op.settle}`);
        }
      }),
    );
    // Async balance rows lag, but row plus queued deltas equals the journal at any instant;
    // once the rollups have drained the queue, the rows alone do (checked with the sync ones).
    expect(await asyncDrift(h.pool, t.tenantId)).toEqual([]);
    await drainTenant(h.pool, t.tenantId);
    await withTenant(h.pool, t.tenantId, async (tx) => {
      // Floors never breached: available (posted less contra holds) stays at or above the floor.
      const breached = await tx.any(sql.unsafe`
        SELECT a.account_id FROM ledger.accounts a JOIN ledger.balances b USING (account_id)
        WHERE a.floor_minor IS NOT NULL AND a.normal_side = 'credit'
          AND b.posted_credits - b.posted_debits - b.pending_debits < a.floor_minor`);
      expect(breached).toEqual([]);
      // Debits equal credits per asset over committed legs (the tenant's accounts are cash and the
      // wallets: read by account, through the index, not by a scan of every tenant's legs, which
      // took seconds per run once the shared database held millions of legs from benches).
      const sides = await tx.one(
        sql.unsafe`SELECT coalesce(sum(debit_minor), 0) AS d, coalesce(sum(credit_minor), 0) AS c FROM ledger.committed_legs
                   WHERE account_id = ANY(${sql.array([cash, ...wallets], 'uuid')})`,
      );
      expect(sides.d).toBe(sides.c);
      // Every balance, sync or async, equals the sum of its committed (posted) and pending entries.
      const drift = await tx.any(sql.unsafe`
        SELECT b.account_id FROM ledger.balances b
        LEFT JOIN LATERAL (
          SELECT coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'committed' AND e.direction = 'debit'), 0) AS pd,
                 coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'committed' AND e.direction = 'credit'), 0) AS pc,
                 coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'pending' AND e.direction = 'debit'), 0) AS hd,
                 coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'pending' AND e.direction = 'credit'), 0) AS hc
          FROM ledger.entries e JOIN ledger.transactions t USING (transaction_id) WHERE e.account_id = b.account_id) s ON true
        WHERE (b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits) IS DISTINCT FROM (s.pd, s.pc, s.hd, s.hc)`);
      expect(drift).toEqual([]);
      // One transaction per idempotency key, however many copies raced.
      for (const { key } of duplicateKeys) {
        expect(
          await tx.oneFirst(
            sql.unsafe`SELECT count(*) FROM ledger.transactions WHERE external_id = ${key}`,
          ),
        ).toBe('1');
      }
    });
    await asOfMatchesJournal(t, [cash, ...wallets]);
  }

  /**
   * Balance-as-of (served from pre-aggregated buckets) equals the plain sum over the journal
   * (committed transactions' legs) at every instant that matters: each leg's own instant, one
   * millisecond either side, the minute and day boundaries around it, and before everything.
   */
  async function asOfMatchesJournal(t: TenantClients, accounts: string[]) {
    for (const accountId of accounts) {
      for (const basis of ['effective', 'recorded'] as const) {
        const column = basis === 'effective' ? 't.effective_at' : 't.finalized_at';
        const instants = new Set<number>([0, Date.now() + 86_400_000]);
        const legs = await withTenant(h.pool, t.tenantId, (tx) =>
          tx.anyFirst(sql.unsafe`
            SELECT ${sql.identifier(column.split('.'))} FROM ledger.entries e JOIN ledger.transactions t USING (transaction_id)
            WHERE e.account_id = ${accountId} AND t.state = 'committed'`),
        );
        for (const value of legs) {
          const ms = Date.parse(value as string);
          const minute = Math.floor(ms / 60_000) * 60_000;
          const day = Math.floor(ms / 86_400_000) * 86_400_000;
          for (const at of [ms - 1, ms, ms + 1, minute - 1, minute, minute + 60_000, day - 1, day])
            instants.add(at);
        }
        // A sample keeps the HTTP calls bounded; the boundaries of a few legs are enough per run.
        const sample = [...instants].sort(() => Math.random() - 0.5).slice(0, 25);
        for (const atMs of sample) {
          const at = new Date(atMs).toISOString();
          const expected = await withTenant(h.pool, t.tenantId, (tx) =>
            tx.one(sql.unsafe`
              SELECT coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'debit'), 0) AS debits,
                     coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'credit'), 0) AS credits,
                     count(*) AS n
              FROM ledger.entries e JOIN ledger.transactions t USING (transaction_id)
              WHERE e.account_id = ${accountId} AND t.state = 'committed'
                AND ${sql.identifier(column.split('.'))} <= ${at}::timestamptz`),
          );
          const reply = await t.reader.get(
            `/v1/accounts/${accountId}/balance-as-of?at=${encodeURIComponent(at)}&basis=${basis}`,
          );
          expect(reply.status).toBe(200);
          expect({
            at,
            basis,
            debits: reply.body.posted.debits_minor,
            credits: reply.body.posted.credits_minor,
            n: String(reply.body.entry_count),
          }).toEqual({ at, basis, ...expected });
        }
      }
    }
  }

  it('when parallel clients post random transfers and holds, then floors hold, debits equal credits, balances (async ones after the rollup) and as-of balances equal the journal, and one key gives one transaction', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArbitrary, { minLength: 10, maxLength: 40 }), async (ops) => {
        await scenario(await h.tenant(), ops);
      }),
      { numRuns: 6 },
    );
  });
});
