/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument -- JSON replies in tests */
import { LEDGER_ERRORS } from '../../../services/ledger/errors';
import { v7 as uuidv7 } from 'uuid';
import { sql } from '../../../db/pool';
import { withSystem, withTenant } from '../../../db/ledger/context';
import { eventually } from '../../support/services';
import { LedgerHarness, type TenantClients } from './support';

jest.setTimeout(60_000);

/** Wallets are credit-normal (what the ledger owes its clients); cash is the debit-normal asset side. */
describe('ledger transactions, balances and the journal', () => {
  const h = new LedgerHarness();
  let t: TenantClients, usd: string, cash: string;
  beforeAll(async () => ({ t, usd, cash } = await h.startWithCash()));
  afterAll(() => h.stop());

  const wallet = (extra: Record<string, unknown> = {}) =>
    h.account(t, usd, { normal_side: 'credit', ...extra });
  const legs = (...items: [string, 'debit' | 'credit', string][]) =>
    items.map(([account_id, direction, amount]) => ({ account_id, direction, amount }));
  const deposit = async (to: string, amount: string) => {
    const reply = await t.poster.post('/v1/transactions', {
      entries: legs([cash, 'debit', amount], [to, 'credit', amount]),
    });
    expect(reply.status).toBe(201);
    return reply.body;
  };
  const move = (from: string, to: string, amount: string, extra: Record<string, unknown> = {}) =>
    t.poster.post('/v1/transactions', {
      entries: legs([from, 'debit', amount], [to, 'credit', amount]),
      ...extra,
    });
  const balance = async (id: string) => (await t.reader.get(`/v1/accounts/${id}/balance`)).body;
  const inFuture = (ms: number) => new Date(Date.now() + ms).toISOString();

  it('when a transaction posts, then 201 has state, created_at, id and available_after per sync account, and GET shows it with its entries', async () => {
    const a = await wallet();
    const created = await deposit(a, '12.34');
    expect(created).toEqual({
      transaction_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      state: 'committed',
      created_at: expect.stringMatching(/Z$/),
      accounts: expect.arrayContaining([
        { account_id: a, available_after_minor: '1234', available_after: '12.34' },
      ]),
    });
    expect(created.accounts).toHaveLength(2);
    const record = await t.reader.get(`/v1/transactions/${created.transaction_id}`);
    expect(record.body).toMatchObject({
      transaction_id: created.transaction_id,
      state: 'committed',
      pending: false,
      finalized_at: expect.any(String),
      effective_at: created.created_at,
      entries: [
        {
          account_id: cash,
          direction: 'debit',
          amount: '12.34',
          amount_minor: '1234',
          scale: 2,
          line_no: 1,
        },
        {
          account_id: a,
          direction: 'credit',
          amount: '12.34',
          amount_minor: '1234',
          scale: 2,
          line_no: 2,
        },
      ],
    });
    const b = await balance(a);
    expect(b).toMatchObject({
      account_id: a,
      posted: { debits: '0.00', credits: '12.34', debits_minor: '0', credits_minor: '1234' },
      pending: { debits: '0.00', credits: '0.00', debits_minor: '0', credits_minor: '0' },
      available: '12.34',
      available_minor: '1234',
      scale: 2,
      version: '1',
    });
    const other = await h.tenant();
    expect(
      (await other.reader.get(`/v1/transactions/${created.transaction_id}`)).body.error.code,
    ).toBe('TRANSACTION_NOT_FOUND');
  });

  it('rule 1: when debits differ from credits or a side is missing, then 422 UNBALANCED_TRANSACTION and nothing is written', async () => {
    const a = await wallet();
    const unequal = await t.poster.post('/v1/transactions', {
      entries: legs([cash, 'debit', '5.00'], [a, 'credit', '4.99']),
    });
    expect(unequal.status).toBe(422);
    expect(unequal.body.error.code).toBe('UNBALANCED_TRANSACTION');
    const oneSided = await t.poster.post('/v1/transactions', {
      entries: legs([cash, 'debit', '5.00'], [a, 'debit', '5.00']),
    });
    expect(oneSided.body.error.code).toBe('UNBALANCED_TRANSACTION');
    expect((await balance(a)).version).toBe('0');
  });

  it('rule 1: the database itself refuses an unbalanced journal at COMMIT (deferred constraint trigger)', async () => {
    const a = await wallet();
    const attempt = withTenant(h.pool, t.tenantId, async (tx) => {
      const id = uuidv7();
      await tx.query(sql.unsafe`INSERT INTO ledger.transactions (transaction_id, tenant_id, state, pending, effective_at, created_at, finalized_at)
        VALUES (${id}, ${t.tenantId}, 'committed', false, now(), now(), now())`);
      await tx.query(sql.unsafe`INSERT INTO ledger.entries (entry_id, tenant_id, transaction_id, account_id, asset_type_id, line_no, direction, amount_minor, created_at)
        VALUES (${uuidv7()}, ${t.tenantId}, ${id}, ${a}, ${usd}, 1, 'credit', 100, now())`);
      return id;
    });
    await expect(attempt).rejects.toMatchObject({ code: 'UNBALANCED_TRANSACTION' });
    expect(LEDGER_ERRORS.UNBALANCED_TRANSACTION.status).toBe(422);
  });

  it('rule 2: the floor is tested once per account on the net of all entries, whatever their order', async () => {
    const a = await wallet();
    const b = await wallet();
    await deposit(a, '10.00');
    // a: -15 +6 = net -9 → 1.00 left; an entry-by-entry check would have refused the first leg.
    const body = {
      entries: legs([a, 'debit', '15.00'], [a, 'credit', '6.00'], [b, 'credit', '9.00']),
    };
    const ok = await t.poster.post('/v1/transactions', body);
    expect(ok.status).toBe(201);
    expect(ok.body.accounts).toContainEqual({
      account_id: a,
      available_after_minor: '100',
      available_after: '1.00',
    });
    const reversed = await t.poster.post('/v1/transactions', {
      entries: legs([a, 'credit', '6.00'], [a, 'debit', '6.50'], [cash, 'credit', '0.50']),
    });
    expect(reversed.status).toBe(201);
    expect((await balance(a)).available).toBe('0.50');
    const breach = await move(a, b, '0.51');
    expect(breach.status).toBe(422);
    expect(breach.body.error).toMatchObject({
      code: 'INSUFFICIENT_AVAILABLE',
      details: { account_id: a, available_minor: '50', balance_floor_minor: '0' },
    });
    expect((await balance(a)).available).toBe('0.50');
    expect((await move(a, b, '0.50')).status).toBe(201);
  });

  it('rule 3: a hold reserves only the contra side; incoming pending funds do not raise available until commit', async () => {
    const a = await wallet();
    const b = await wallet();
    await deposit(a, '10.00');
    const hold = await move(a, b, '6.00', { pending: true, expires_at: inFuture(3_600_000) });
    expect(hold.status).toBe(201);
    expect(hold.body.state).toBe('pending');
    expect(hold.body.accounts).toEqual(
      expect.arrayContaining([
        { account_id: a, available_after_minor: '400', available_after: '4.00' },
        { account_id: b, available_after_minor: '0', available_after: '0.00' },
      ]),
    );
    expect(await balance(b)).toMatchObject({ available: '0.00', pending: { credits: '6.00' } });
    // b's incoming 6.00 cannot be spent yet.
    expect((await move(b, a, '0.01')).body.error.code).toBe('INSUFFICIENT_AVAILABLE');
    expect((await move(a, b, '4.01')).body.error.code).toBe('INSUFFICIENT_AVAILABLE');
    const committed = await t.poster.post(`/v1/transactions/${hold.body.transaction_id}/commit`);
    expect(committed.status).toBe(200);
    expect(committed.body).toEqual({
      transaction_id: hold.body.transaction_id,
      state: 'committed',
      finalized_at: expect.any(String),
    });
    expect(await balance(b)).toMatchObject({
      available: '6.00',
      pending: { credits: '0.00' },
      posted: { credits: '6.00' },
    });
    expect(await balance(a)).toMatchObject({
      available: '4.00',
      pending: { debits: '0.00' },
      posted: { debits: '6.00', credits: '10.00' },
    });
  });

  it('rule 4: an async account has no floor, is never locked, and its balance catches up by the rollup', async () => {
    const lagging = await wallet({ balance_tracking: 'async' });
    const b = await wallet();
    const reply = await move(lagging, b, '3.00');
    expect(reply.status).toBe(201);
    expect(reply.body.accounts.map((x: { account_id: string }) => x.account_id)).toEqual([b]);
    const caughtUp = await eventually(async () => {
      const current = await balance(lagging);
      return current.available === '-3.00' ? current : undefined;
    }, 10_000);
    expect(caughtUp).toMatchObject({ balance_tracking: 'async', posted: { debits: '3.00' } });
  });

  it('rule 5: effective_at, expires_at and at need an explicit offset; a decoded + is INVALID_AS_OF, %2B and Z pass', async () => {
    const a = await wallet();
    const noOffset = await move(cash, a, '1.00', { effective_at: '2026-01-01T00:00:00' });
    expect(noOffset.body.error.code).toBe('INVALID_EFFECTIVE_AT');
    const holdNoOffset = await move(cash, a, '1.00', {
      pending: true,
      expires_at: '2099-01-01T00:00:00',
    });
    expect(holdNoOffset.body.error.code).toBe('INVALID_EXPIRES_AT');
    const past = await move(cash, a, '1.00', { pending: true, expires_at: '2020-01-01T00:00:00Z' });
    expect(past.body.error.code).toBe('INVALID_EXPIRES_AT');
    const missing = await move(cash, a, '1.00', { pending: true });
    expect(missing.body.error.code).toBe('INVALID_EXPIRES_AT');
    const plus = await t.reader.get(`/v1/accounts/${a}/balance-as-of?at=2026-01-01T02:00:00+02:00`);
    expect(plus.status).toBe(422);
    expect(plus.body.error.code).toBe('INVALID_AS_OF');
    expect(
      (await t.reader.get(`/v1/accounts/${a}/balance-as-of?at=2026-01-01T02:00:00%2B02:00`)).status,
    ).toBe(200);
    expect(
      (await t.reader.get(`/v1/accounts/${a}/balance-as-of?at=2026-01-01T00:00:00Z`)).status,
    ).toBe(200);
    expect((await t.reader.get(`/v1/accounts/${a}/balance-as-of`)).body.error.code).toBe(
      'INVALID_AS_OF',
    );
    expect(
      (await t.reader.get(`/v1/accounts/${a}/balance-as-of?at=2026-01-01T00:00:00Z&basis=booked`))
        .body.error.code,
    ).toBe('INVALID_AS_OF');
  });

  it('rule 6: as-of by effective_at or finalized_at counts committed transactions only; holds are out until commit, voided never in', async () => {
    const a = await wallet();
    const backdated = new Date(Date.now() - 24 * 3600 * 1000);
    await move(cash, a, '5.00', { effective_at: backdated.toISOString() });
    const voided = await move(cash, a, '7.00', { pending: true, expires_at: inFuture(3_600_000) });
    await t.poster.post(`/v1/transactions/${voided.body.transaction_id}/void`);
    const held = await move(cash, a, '2.00', { pending: true, expires_at: inFuture(3_600_000) });
    const asOf = (at: Date | string, basis = 'effective') =>
      t.reader.get(
        `/v1/accounts/${a}/balance-as-of?at=${encodeURIComponent(typeof at === 'string' ? at : at.toISOString())}&basis=${basis}`,
      );

    const hourAfter = new Date(backdated.getTime() + 3600 * 1000);
    expect((await asOf(hourAfter)).body).toMatchObject({
      balance: '5.00',
      balance_minor: '500',
      entry_count: 1,
      derived_from: 'journal',
      scale: 2,
      balance_tracking: 'sync',
    });
    expect((await asOf(hourAfter, 'recorded')).body).toMatchObject({
      balance: '0.00',
      entry_count: 0,
    });
    const now = new Date(Date.now() + 1000);
    expect((await asOf(now)).body).toMatchObject({
      balance: '5.00',
      entry_count: 1,
      posted: { credits: '5.00', credits_minor: '500' },
    });
    const commit = await t.poster.post(`/v1/transactions/${held.body.transaction_id}/commit`);
    const later = new Date(Date.parse(commit.body.finalized_at) + 1);
    expect((await asOf(later, 'recorded')).body).toMatchObject({ balance: '7.00', entry_count: 2 });
    expect(
      (await asOf(new Date(Date.parse(commit.body.finalized_at) - 1), 'recorded')).body,
    ).toMatchObject({ balance: '5.00' });
  });

  it('as-of buckets: a leg effective when recorded has one row per width (basis both), a backdated one a row per basis; rows one per basis (as before migration 0016) give the same as-of', async () => {
    const a = await wallet();
    await deposit(a, '3.00');
    const backdated = new Date(Date.now() - 2 * 24 * 3600 * 1000);
    expect((await move(cash, a, '5.00', { effective_at: backdated.toISOString() })).status).toBe(
      201,
    );
    const rows = () =>
      withTenant(h.pool, t.tenantId, (tx) =>
        tx.any(sql.unsafe`
          SELECT basis, width, leg_count::int AS legs FROM ledger.leg_buckets
          WHERE account_id = ${a} ORDER BY basis, width`),
      );
    expect(await rows()).toEqual([
      { basis: 'both', width: 'day', legs: 1 },
      { basis: 'both', width: 'minute', legs: 1 },
      { basis: 'effective', width: 'day', legs: 1 },
      { basis: 'effective', width: 'minute', legs: 1 },
      { basis: 'recorded', width: 'day', legs: 1 },
      { basis: 'recorded', width: 'minute', legs: 1 },
    ]);

    const instants = [
      new Date(backdated.getTime() - 60_000),
      new Date(backdated.getTime() + 60_000),
      new Date(Date.now() - 3_600_000),
      new Date(Date.now() + 120_000),
    ];
    const asOfAll = async () => {
      const answers: unknown[] = [];
      for (const at of instants)
        for (const basis of ['effective', 'recorded']) {
          const reply = await t.reader.get(
            `/v1/accounts/${a}/balance-as-of?at=${encodeURIComponent(at.toISOString())}&basis=${basis}`,
          );
          answers.push([basis, reply.body.balance_minor, reply.body.entry_count]);
        }
      return answers;
    };
    const before = await asOfAll();
    expect(before).toEqual([
      ['effective', '0', 0],
      ['recorded', '0', 0],
      ['effective', '500', 1],
      ['recorded', '0', 0],
      ['effective', '500', 1],
      ['recorded', '0', 0],
      ['effective', '800', 2],
      ['recorded', '800', 2],
    ]);

    // What the trigger wrote before 0016: each 'both' row as one row per basis.
    await withSystem(h.pool, async (tx) => {
      await tx.query(sql.unsafe`
        INSERT INTO ledger.leg_buckets AS b
          (account_id, basis, width, bucket_start, tenant_id, debit_minor, credit_minor, leg_count)
        SELECT o.account_id, x.basis, o.width, o.bucket_start, o.tenant_id, o.debit_minor, o.credit_minor, o.leg_count
        FROM ledger.leg_buckets o CROSS JOIN (VALUES ('effective'), ('recorded')) AS x(basis)
        WHERE o.account_id = ${a} AND o.basis = 'both'
        ON CONFLICT (account_id, basis, width, bucket_start) DO UPDATE
          SET debit_minor = b.debit_minor + EXCLUDED.debit_minor,
              credit_minor = b.credit_minor + EXCLUDED.credit_minor,
              leg_count = b.leg_count + EXCLUDED.leg_count`);
      await tx.query(
        sql.unsafe`DELETE FROM ledger.leg_buckets WHERE account_id = ${a} AND basis = 'both'`,
      );
    });
    expect((await rows()).map((r) => r.basis as string)).not.toContain('both');
    expect(await asOfAll()).toEqual(before);
  });

  it('as-of buckets start where balance_as_of cuts (UTC days and minutes, from year 1 to 9999, either side of 1970 and 2000)', async () => {
    const instants = [
      '0001-03-01T12:34:56.789Z',
      '1969-12-31T23:59:59.999Z',
      '1999-12-31T23:59:59.999+05:30',
      '2000-01-01T00:00:00.000Z',
      '2024-02-29T23:59:00.000-01:00',
      '9999-12-31T23:59:59.999Z',
    ];
    const accounts: string[] = [];
    for (const effective_at of instants) {
      const a = await wallet();
      accounts.push(a);
      expect((await move(cash, a, '1.00', { effective_at })).status).toBe(201);
    }
    const starts = await withTenant(h.pool, t.tenantId, (tx) =>
      tx.any(sql.unsafe`
        SELECT b.width, b.bucket_start = date_trunc(b.width, tr.effective_at, 'UTC') AS same
        FROM ledger.leg_buckets b
        JOIN ledger.entries e ON e.account_id = b.account_id
        JOIN ledger.transactions tr ON tr.transaction_id = e.transaction_id
        WHERE b.account_id = ANY (${sql.array(accounts, 'uuid')}) AND b.basis = 'effective'`),
    );
    expect(starts).toHaveLength(2 * instants.length);
    expect(starts.every((r) => r.same === true)).toBe(true);
    for (const [i, at] of instants.entries()) {
      const count = async (instant: number): Promise<number> =>
        (
          await t.reader.get(
            `/v1/accounts/${accounts[i]}/balance-as-of?at=${new Date(instant).toISOString()}&basis=effective`,
          )
        ).body.entry_count as number;
      expect([await count(Date.parse(at) - 1), await count(Date.parse(at))]).toEqual([0, 1]);
    }
  });

  it('rule 7: entries list every leg newest first; with state=committed they sum to the posted counters', async () => {
    const a = await wallet();
    await deposit(a, '4.00');
    const hold = await move(a, cash, '1.00', { pending: true, expires_at: inFuture(3_600_000) });
    const voided = await move(a, cash, '0.50', { pending: true, expires_at: inFuture(3_600_000) });
    await t.poster.post(`/v1/transactions/${voided.body.transaction_id}/void`);
    const all = (await t.reader.get(`/v1/accounts/${a}/entries`)).body;
    expect(all.entries.map((e: { transaction_state: string }) => e.transaction_state)).toEqual([
      'voided',
      'pending',
      'committed',
    ]);
    expect(all.entries[1]).toMatchObject({
      transaction_id: hold.body.transaction_id,
      direction: 'debit',
      amount: '1.00',
      amount_minor: '100',
      scale: 2,
      finalized_at: null,
    });
    expect(all.next_cursor).toBeNull();
    const committed = (await t.reader.get(`/v1/accounts/${a}/entries?state=committed`)).body
      .entries;
    const credits = committed
      .filter((e: { direction: string }) => e.direction === 'credit')
      .reduce((s: bigint, e: { amount_minor: string }) => s + BigInt(e.amount_minor), 0n);
    const b = await balance(a);
    expect(credits.toString()).toBe(b.posted.credits_minor);
    const paged = await t.reader.get(`/v1/accounts/${a}/entries?limit=2`);
    expect(paged.body.entries).toHaveLength(2);
    const rest = await t.reader.get(
      `/v1/accounts/${a}/entries?limit=2&cursor=${paged.body.next_cursor}`,
    );
    expect(rest.body).toMatchObject({
      entries: [{ transaction_state: 'committed' }],
      next_cursor: null,
    });
    expect((await t.reader.get(`/v1/accounts/${a}/entries?state=settled`)).body.error.code).toBe(
      'INVALID_STATE',
    );
  });

  it('rule 8: there is no listing of transactions (405 with Allow: POST)', async () => {
    const reply = await t.reader.get('/v1/transactions');
    expect(reply.status).toBe(405);
    expect(reply.body.error.code).toBe('METHOD_NOT_ALLOWED');
    expect(reply.headers.get('allow')).toBe('POST');
  });

  it('when a final transaction is committed or voided again, then 409 INVALID_TRANSACTION_STATE', async () => {
    const a = await wallet();
    const posted = await deposit(a, '1.00');
    for (const action of ['commit', 'void']) {
      const reply = await t.poster.post(`/v1/transactions/${posted.transaction_id}/${action}`);
      expect(reply.status).toBe(409);
      expect(reply.body.error.code).toBe('INVALID_TRANSACTION_STATE');
    }
    const hold = await move(cash, a, '1.00', { pending: true, expires_at: inFuture(3_600_000) });
    expect(
      (await t.poster.post(`/v1/transactions/${hold.body.transaction_id}/void`)).body.state,
    ).toBe('voided');
    expect(
      (await t.poster.post(`/v1/transactions/${hold.body.transaction_id}/commit`)).body.error.code,
    ).toBe('INVALID_TRANSACTION_STATE');
    expect((await t.poster.post(`/v1/transactions/${uuidv7()}/commit`)).body.error.code).toBe(
      'TRANSACTION_NOT_FOUND',
    );
  });

  it('when a hold is committed after its expires_at, then 410 HOLD_EXPIRED even before any sweep, and the hold is released', async () => {
    const a = await wallet();
    const b = await wallet();
    await deposit(a, '5.00');
    const hold = await move(a, b, '5.00', { pending: true, expires_at: inFuture(1_000) });
    expect((await balance(a)).available).toBe('0.00');
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    const reply = await t.poster.post(`/v1/transactions/${hold.body.transaction_id}/commit`);
    expect(reply.status).toBe(410);
    expect(reply.body.error.code).toBe('HOLD_EXPIRED');
    expect((await t.reader.get(`/v1/transactions/${hold.body.transaction_id}`)).body.state).toBe(
      'expired',
    );
    expect(await balance(a)).toMatchObject({ available: '5.00', pending: { debits: '0.00' } });
    expect(
      (await t.poster.post(`/v1/transactions/${hold.body.transaction_id}/commit`)).status,
    ).toBe(410);
    expect(
      (await t.poster.post(`/v1/transactions/${hold.body.transaction_id}/void`)).body.error.code,
    ).toBe('INVALID_TRANSACTION_STATE');
  });

  it('when an account of a hold is frozen, then commit is 409 ACCOUNT_NOT_ACTIVE with Retry-After, and void still releases', async () => {
    const a = await wallet();
    const b = await wallet();
    await deposit(a, '5.00');
    const hold = await move(a, b, '2.00', { pending: true, expires_at: inFuture(3_600_000) });
    await t.admin.patch(`/v1/accounts/${b}`, { status: 'frozen' });
    const refused = await t.poster.post(`/v1/transactions/${hold.body.transaction_id}/commit`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('ACCOUNT_NOT_ACTIVE');
    expect(refused.headers.get('retry-after')).toBeTruthy();
    expect(
      (await t.poster.post(`/v1/transactions/${hold.body.transaction_id}/void`)).body.state,
    ).toBe('voided');
    expect((await balance(a)).available).toBe('5.00');
  });

  it('limits: 2 and 100 entries pass, 1 and 101 are ENTRY_COUNT_OUT_OF_RANGE; description 1024/1025; external_id 255/256', async () => {
    const a = await wallet();
    const many = (n: number) => ({
      entries: Array.from({ length: n }, (_, i) => ({
        account_id: i % 2 === 0 ? cash : a,
        direction: i % 2 === 0 ? 'debit' : 'credit',
        amount: '0.01',
      })),
    });
    expect((await t.poster.post('/v1/transactions', many(100))).status).toBe(201);
    expect((await t.poster.post('/v1/transactions', many(101))).body.error.code).toBe(
      'ENTRY_COUNT_OUT_OF_RANGE',
    );
    expect((await t.poster.post('/v1/transactions', many(1))).body.error.code).toBe(
      'ENTRY_COUNT_OUT_OF_RANGE',
    );
    expect((await move(cash, a, '1.00', { description: 'd'.repeat(1024) })).status).toBe(201);
    expect((await move(cash, a, '1.00', { description: 'd'.repeat(1025) })).body.error.code).toBe(
      'INVALID_DESCRIPTION',
    );
    expect((await move(cash, a, '1.00', { external_id: 'e'.repeat(255) })).status).toBe(201);
    expect((await move(cash, a, '1.00', { external_id: 'e'.repeat(256) })).body.error.code).toBe(
      'INVALID_EXTERNAL_ID',
    );
    expect((await move(cash, a, '1.001')).body.error.code).toBe('INVALID_AMOUNT_SCALE');
    expect((await move(cash, a, '1e2')).body.error.code).toBe('INVALID_AMOUNT');
    expect((await move(cash, a, '0.00')).body.error.code).toBe('INVALID_AMOUNT');
    expect((await move('not-a-uuid', a, '1.00')).body.error.code).toBe('INVALID_ACCOUNT_ID');
    expect((await move(uuidv7(), a, '1.00')).body.error.code).toBe('REFERENCE_NOT_FOUND');
    expect(
      (
        await t.poster.post('/v1/transactions', {
          entries: legs([cash, 'debit', '1.00'], [a, 'credit', '1.00']),
          amount: 5,
        })
      ).body.error.code,
    ).toBe('INVALID_REQUEST');
  });

  it('when the same external_id is posted under another Idempotency-Key, then 409 DUPLICATE_TRANSACTION', async () => {
    const a = await wallet();
    const externalId = `ext-${uuidv7()}`;
    expect((await move(cash, a, '1.00', { external_id: externalId })).status).toBe(201);
    const dup = await move(cash, a, '1.00', { external_id: externalId });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({
      code: 'DUPLICATE_TRANSACTION',
      details: { external_id: externalId },
    });
    expect((await balance(a)).available).toBe('1.00');
  });
});
