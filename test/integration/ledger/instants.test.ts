/* eslint-disable @typescript-eslint/no-unsafe-member-access -- JSON replies in tests */
import { LedgerHarness, transfer, type TenantClients } from './support';

jest.setTimeout(60_000);

/** `at` and `effective_at` as the OpenAPI document declares them: RFC 3339 date-times. */
describe('instants in requests', () => {
  const h = new LedgerHarness();
  let t: TenantClients;
  let usd: string;
  let cash: string;
  beforeAll(async () => {
    ({ t, usd, cash } = await h.startWithCash());
  });
  afterAll(() => h.stop());

  const asOf = (at: string) =>
    t.reader.get(`/v1/accounts/${cash}/balance-as-of?at=${encodeURIComponent(at)}`);

  it('when an offset carries an instant past year 9999, then it is 422 INVALID_AS_OF, not a 500', async () => {
    const reply = await asOf('9999-12-31T23:59:59-23:59');
    expect([reply.status, reply.body.error?.code]).toEqual([422, 'INVALID_AS_OF']);
  });

  it('when at names a day the month does not have, then it is 422, not the next month', async () => {
    const reply = await asOf('2026-02-30T00:00:00Z');
    expect([reply.status, reply.body.error?.code]).toEqual([422, 'INVALID_AS_OF']);
  });

  it('when at has a leap second or a long fraction, then it is served', async () => {
    expect((await asOf('2016-12-31T23:59:60Z')).body.as_of).toBe('2017-01-01T00:00:00.000Z');
    expect((await asOf('2026-01-02T03:04:05.1234567891Z')).body.as_of).toBe(
      '2026-01-02T03:04:05.123Z',
    );
  });

  it('when effective_at is past year 9999 in UTC, then the posting is 422 INVALID_EFFECTIVE_AT', async () => {
    const other = await h.account(t, usd, { balance_floor: null });
    const reply = await t.poster.post(
      '/v1/transactions',
      transfer(cash, other, '1.00', { effective_at: '9999-12-31T23:59:59-23:59' }),
    );
    expect([reply.status, reply.body.error?.code]).toEqual([422, 'INVALID_EFFECTIVE_AT']);
  });
});
