/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return -- JSON replies in tests */
import { sql } from '../../../db/pool';
import { withTenant } from '../../../db/ledger/context';
import { call, LedgerHarness, newKey, type TenantClients } from './support';

jest.setTimeout(60_000);

describe('ledger idempotency', () => {
  const h = new LedgerHarness();
  let t: TenantClients, usd: string, cash: string;
  beforeAll(async () => ({ t, usd, cash } = await h.startWithCash()));
  afterAll(() => h.stop());

  const wallet = () => h.account(t, usd, { normal_side: 'credit' });
  const deposit = (to: string, amount: string) => ({
    entries: [
      { account_id: cash, direction: 'debit', amount },
      { account_id: to, direction: 'credit', amount },
    ],
  });
  const transactionsOf = (accountId: string) =>
    withTenant(h.pool, t.tenantId, (tx) =>
      tx.oneFirst(
        sql.unsafe`SELECT count(DISTINCT transaction_id) FROM ledger.entries WHERE account_id = ${accountId}`,
      ),
    );

  it('when a mutating request has no Idempotency-Key, then 400 MISSING_IDEMPOTENCY_KEY; 255 chars pass and 256 fail', async () => {
    const a = await wallet();
    const missing = await t.poster.post('/v1/transactions', deposit(a, '1.00'), null);
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('MISSING_IDEMPOTENCY_KEY');
    expect(
      (await t.poster.post('/v1/transactions', deposit(a, '1.00'), 'k'.repeat(255) + Date.now()))
        .status,
    ).toBe(422);
    expect(
      (
        await t.poster.post(
          '/v1/transactions',
          deposit(a, '1.00'),
          `${Date.now()}`.padEnd(255, 'k'),
        )
      ).status,
    ).toBe(201);
    expect(
      (
        await t.poster.post(
          '/v1/transactions',
          deposit(a, '1.00'),
          `${Date.now()}`.padEnd(256, 'k'),
        )
      ).body.error.code,
    ).toBe('INVALID_REQUEST');
    expect(await transactionsOf(a)).toBe('1');
  });

  it('when the same key and body are replayed, then the original status and body come back and nothing posts twice', async () => {
    const a = await wallet();
    const key = newKey();
    const first = await t.poster.post('/v1/transactions', deposit(a, '2.00'), key);
    const again = await t.poster.post('/v1/transactions', deposit(a, '2.00'), key);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await transactionsOf(a)).toBe('1');
  });

  it('when the same key comes with a different body, then 422 IDEMPOTENCY_KEY_MISMATCH', async () => {
    const a = await wallet();
    const key = newKey();
    await t.poster.post('/v1/transactions', deposit(a, '2.00'), key);
    const other = await t.poster.post('/v1/transactions', deposit(a, '3.00'), key);
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('IDEMPOTENCY_KEY_MISMATCH');
  });

  it('when the same key is used on another endpoint or by another tenant, then it is a different key', async () => {
    const key = newKey();
    expect(
      (
        await t.admin.post(
          '/v1/asset-types',
          { code: `A${Date.now()}`, kind: 'fiat', scale: 2 },
          key,
        )
      ).status,
    ).toBe(201);
    expect(
      (await t.admin.post('/v1/accounts', { asset_type_id: usd, normal_side: 'debit' }, key))
        .status,
    ).toBe(201);
    const other = await h.tenant();
    expect(
      (
        await other.admin.post(
          '/v1/asset-types',
          { code: `A${Date.now()}`, kind: 'fiat', scale: 2 },
          key,
        )
      ).status,
    ).toBe(201);
  });

  it('when a final refusal is replayed, then it answers the same refusal; a transient one (Retry-After) is not remembered', async () => {
    const a = await wallet();
    const b = await wallet();
    const spend = {
      entries: [
        { account_id: a, direction: 'debit', amount: '1.00' },
        { account_id: b, direction: 'credit', amount: '1.00' },
      ],
    };
    const key = newKey();
    expect((await t.poster.post('/v1/transactions', spend, key)).body.error.code).toBe(
      'INSUFFICIENT_AVAILABLE',
    );
    await t.poster.post('/v1/transactions', deposit(a, '5.00'));
    const replayed = await t.poster.post('/v1/transactions', spend, key);
    expect(replayed.status).toBe(422);
    expect(replayed.body.error.code).toBe('INSUFFICIENT_AVAILABLE');

    await t.admin.patch(`/v1/accounts/${b}`, { status: 'frozen' });
    const transientKey = newKey();
    expect((await t.poster.post('/v1/transactions', spend, transientKey)).body.error.code).toBe(
      'ACCOUNT_NOT_ACTIVE',
    );
    await t.admin.patch(`/v1/accounts/${b}`, { status: 'active' });
    expect((await t.poster.post('/v1/transactions', spend, transientKey)).status).toBe(201);
  });

  it('when a request is refused before its key is judged (wrong role, unknown secret), then the key stays unclaimed and the right request with it posts', async () => {
    const a = await wallet();
    const key = newKey();
    const wrongRole = await t.reader.post('/v1/transactions', deposit(a, '1.00'), key);
    expect(wrongRole.body.error.code).toBe('FORBIDDEN');
    const forged = `${t.poster.token.slice(0, -43)}${'A'.repeat(43)}`;
    const unknown = await call(h.url, 'POST', '/v1/transactions', forged, deposit(a, '1.00'), key);
    expect(unknown.body.error.code).toBe('UNAUTHENTICATED');
    const posted = await t.poster.post('/v1/transactions', deposit(a, '1.00'), key);
    expect(posted.status).toBe(201);
    expect(posted.headers.get('idempotent-replayed')).toBeNull();
    expect(await transactionsOf(a)).toBe('1');
  });

  it('when many identical requests race with one key, then exactly one transaction exists; the others replay it or get 409 IDEMPOTENCY_IN_FLIGHT with Retry-After', async () => {
    const a = await wallet();
    const key = newKey();
    const replies = await Promise.all(
      Array.from({ length: 12 }, () =>
        call(h.url, 'POST', '/v1/transactions', t.poster.token, deposit(a, '1.00'), key),
      ),
    );
    const created = replies.filter((r) => r.status === 201);
    const inFlight = replies.filter((r) => r.status === 409);
    expect(created.length + inFlight.length).toBe(12);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((r) => r.body.transaction_id)).size).toBe(1);
    for (const r of inFlight) {
      expect(r.body.error.code).toBe('IDEMPOTENCY_IN_FLIGHT');
      expect(r.headers.get('retry-after')).toBe('1');
    }
    expect(await transactionsOf(a)).toBe('1');
  });
});
