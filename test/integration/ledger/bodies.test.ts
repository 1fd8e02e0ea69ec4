import { withSystem } from '../../../db/ledger/context';
import { sql } from '../../../db/pool';
import { LedgerHarness, newKey, transfer, type LedgerClient, type TenantClients } from './support';

jest.setTimeout(60_000);

describe('ledger mutating routes sent without a body', () => {
  const h = new LedgerHarness();
  let t: TenantClients;
  let usd: string;
  let cash: string;
  beforeAll(async () => {
    ({ t, usd, cash } = await h.startWithCash());
  });
  afterAll(() => h.stop());

  const rowsOf = async (tenantId: string): Promise<Record<string, string>> =>
    withSystem(
      h.pool,
      async (tx) =>
        (await tx.one(sql.unsafe`
        SELECT (SELECT count(*) FROM ledger.asset_types WHERE tenant_id = ${tenantId}) AS asset_types,
               (SELECT count(*) FROM ledger.accounts WHERE tenant_id = ${tenantId}) AS accounts,
               (SELECT count(*) FROM ledger.transactions WHERE tenant_id = ${tenantId}) AS transactions,
               (SELECT count(*) FROM ledger.tenants WHERE parent_id = ${tenantId}) AS sub_tenants`)) as Record<
          string,
          string
        >,
    );

  it('when POST or PATCH carries an Idempotency-Key and no body, then 422 INVALID_REQUEST in the envelope, nothing written, and the same key works once a body is sent', async () => {
    const before = await rowsOf(t.tenantId);
    const routes: [LedgerClient, 'post' | 'patch', string][] = [
      [t.admin, 'post', '/v1/asset-types'],
      [t.admin, 'patch', `/v1/asset-types/${usd}`],
      [t.admin, 'post', '/v1/accounts'],
      [t.admin, 'patch', `/v1/accounts/${cash}`],
      [t.poster, 'post', '/v1/transactions'],
      [t.partner, 'post', '/v1/sub-tenants'],
    ];
    for (const [client, method, path] of routes) {
      const reply =
        method === 'post'
          ? await client.post(path, undefined, newKey())
          : await client.patch(path, undefined, newKey());
      expect([method, path, reply.status, reply.body]).toEqual([
        method,
        path,
        422,
        {
          error: {
            code: 'INVALID_REQUEST',
            message: 'a JSON request body is required',
            details: [
              {
                field: '',
                location: 'body',
                message: 'a JSON request body is required',
                type: 'any.required',
              },
            ],
          },
        },
      ]);
    }
    expect(await rowsOf(t.tenantId)).toEqual(before);

    const key = newKey();
    expect((await t.admin.post('/v1/accounts', undefined, key)).status).toBe(422);
    const created = await t.admin.post(
      '/v1/accounts',
      { asset_type_id: usd, name: 'later', normal_side: 'debit' },
      key,
    );
    expect(created.status).toBe(201);
    const wallet = created.body.account_id as string;
    expect((await t.poster.post('/v1/transactions', transfer(cash, wallet, '1.00'))).status).toBe(
      201,
    );
  });
});
