/* eslint-disable @typescript-eslint/no-unsafe-assignment -- JSON replies in tests */
import { ledgerRouter } from '../../../api/ledger/routes';
import { createLedgerBatchers } from '../../../services/ledger/batchers';
import { RememberedKeys } from '../../../services/ledger/credentials';
import { call, client, LedgerHarness, newKey, transfer, type TenantClients } from './support';

jest.setTimeout(60_000);

type Role = 'admin' | 'poster' | 'reader' | 'partner';
const ROLES: readonly Role[] = ['admin', 'poster', 'reader', 'partner'];

/** Real ids of one fresh root tenant, made in beforeAll by the keys that may make them. */
interface Ids {
  assetType: string;
  account: string;
  cash: string;
  transaction: string;
  holdToCommit: string;
  holdToVoid: string;
  subTenant: string;
  key: string;
  keySecret: string;
}

interface Row {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** The Path column of the spec's Endpoints table, as written there. */
  route: string;
  /** The Role column: the one role allowed. */
  role: Role;
  /** The route with real ids. */
  path: () => string;
  body?: () => unknown;
  /** What the allowed key gets with these ids. */
  status: number;
  /** For mutating routes: what a refused call must leave as it was (and the allowed call changes). */
  observe?: () => Promise<unknown>;
}

describe('ledger roles: every authenticated route answers its one role and refuses the other three', () => {
  const h = new LedgerHarness();
  let t: TenantClients;
  let id: Ids;
  const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();
  const created = (reply: { status: number; body: Record<string, unknown> }, field: string) => {
    if (reply.status !== 201)
      throw new Error(`setup: ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply.body[field] as string;
  };

  beforeAll(async () => {
    await h.start();
    t = await h.tenant('roles');
    const assetType = await h.assetType(t);
    const cash = await h.account(t, assetType, { normal_side: 'debit', balance_floor: null });
    const account = await h.account(t, assetType, { normal_side: 'debit', name: 'roles' });
    const post = async (body: unknown) =>
      created(await t.poster.post('/v1/transactions', body), 'transaction_id');
    const transaction = await post(transfer(cash, account, '5.00'));
    const holdToCommit = await post(
      transfer(cash, account, '1.00', { pending: true, expires_at: inAnHour() }),
    );
    const holdToVoid = await post(
      transfer(cash, account, '2.00', { pending: true, expires_at: inAnHour() }),
    );
    const subTenant = created(
      await t.partner.post('/v1/sub-tenants', {
        name: 'roles-client',
        kind: 'sandbox',
        contact_email: 'ops@roles.example',
      }),
      'sub_tenant_id',
    );
    const issued = await t.partner.post(`/v1/sub-tenants/${subTenant}/keys`, {
      label: 'to-revoke',
      role: 'ledger_reader',
      ttl_days: 1,
    });
    id = {
      assetType,
      account,
      cash,
      transaction,
      holdToCommit,
      holdToVoid,
      subTenant,
      key: created(issued, 'key_id'),
      keySecret: issued.body.secret as string,
    };
  });
  afterAll(() => h.stop());

  const read = async (path: string, who: Role = 'reader') => {
    const reply = await t[who].get(path);
    expect([path, reply.status]).toEqual([path, 200]);
    return reply.body;
  };

  /** The spec's Endpoints table row for row (GET /healthz, the one route without a role, left out). */
  const rows: Row[] = [
    {
      method: 'POST',
      route: '/v1/asset-types',
      role: 'admin',
      path: () => '/v1/asset-types',
      body: () => ({ code: 'ROLES-EUR', kind: 'fiat', scale: 2 }),
      status: 201,
      observe: () => read('/v1/asset-types'),
    },
    {
      method: 'GET',
      route: '/v1/asset-types',
      role: 'reader',
      path: () => '/v1/asset-types',
      status: 200,
    },
    {
      method: 'PATCH',
      route: '/v1/asset-types/{asset_type_id}',
      role: 'admin',
      path: () => `/v1/asset-types/${id.assetType}`,
      body: () => ({ description: 'patched by the admin key' }),
      status: 200,
      observe: () => read('/v1/asset-types'),
    },
    {
      method: 'POST',
      route: '/v1/accounts',
      role: 'admin',
      path: () => '/v1/accounts',
      body: () => ({ asset_type_id: id.assetType, name: 'made', normal_side: 'credit' }),
      status: 201,
      observe: () => read('/v1/accounts?limit=1000'),
    },
    {
      method: 'GET',
      route: '/v1/accounts',
      role: 'reader',
      path: () => '/v1/accounts',
      status: 200,
    },
    {
      method: 'GET',
      route: '/v1/accounts/{id}',
      role: 'reader',
      path: () => `/v1/accounts/${id.account}`,
      status: 200,
    },
    {
      method: 'PATCH',
      route: '/v1/accounts/{id}',
      role: 'admin',
      path: () => `/v1/accounts/${id.account}`,
      body: () => ({ name: 'renamed by the admin key' }),
      status: 200,
      observe: () => read(`/v1/accounts/${id.account}`),
    },
    {
      method: 'POST',
      route: '/v1/transactions',
      role: 'poster',
      path: () => '/v1/transactions',
      body: () => transfer(id.cash, id.account, '0.25'),
      status: 201,
      observe: () => read(`/v1/accounts/${id.account}/entries?limit=1000`),
    },
    {
      method: 'GET',
      route: '/v1/transactions/{id}',
      role: 'reader',
      path: () => `/v1/transactions/${id.transaction}`,
      status: 200,
    },
    {
      method: 'POST',
      route: '/v1/transactions/{id}/commit',
      role: 'poster',
      path: () => `/v1/transactions/${id.holdToCommit}/commit`,
      status: 200,
      observe: () => read(`/v1/transactions/${id.holdToCommit}`),
    },
    {
      method: 'POST',
      route: '/v1/transactions/{id}/void',
      role: 'poster',
      path: () => `/v1/transactions/${id.holdToVoid}/void`,
      status: 200,
      observe: () => read(`/v1/transactions/${id.holdToVoid}`),
    },
    {
      method: 'GET',
      route: '/v1/accounts/{id}/balance',
      role: 'reader',
      path: () => `/v1/accounts/${id.account}/balance`,
      status: 200,
    },
    {
      method: 'GET',
      route: '/v1/accounts/{id}/balance-as-of',
      role: 'reader',
      path: () => `/v1/accounts/${id.account}/balance-as-of?at=${new Date().toISOString()}`,
      status: 200,
    },
    {
      method: 'GET',
      route: '/v1/accounts/{id}/entries',
      role: 'reader',
      path: () => `/v1/accounts/${id.account}/entries`,
      status: 200,
    },
    {
      method: 'POST',
      route: '/v1/sub-tenants',
      role: 'partner',
      path: () => '/v1/sub-tenants',
      body: () => ({ name: 'made', kind: 'production', contact_email: 'made@roles.example' }),
      status: 201,
      observe: () => read('/v1/sub-tenants?limit=1000', 'partner'),
    },
    {
      method: 'GET',
      route: '/v1/sub-tenants',
      role: 'partner',
      path: () => '/v1/sub-tenants',
      status: 200,
    },
    {
      method: 'PATCH',
      route: '/v1/sub-tenants/{id}',
      role: 'partner',
      path: () => `/v1/sub-tenants/${id.subTenant}`,
      body: () => ({ name: 'renamed by the partner key' }),
      status: 200,
      observe: () => read('/v1/sub-tenants?limit=1000', 'partner'),
    },
    {
      method: 'POST',
      route: '/v1/sub-tenants/{id}/keys',
      role: 'partner',
      path: () => `/v1/sub-tenants/${id.subTenant}/keys`,
      body: () => ({ label: 'made', role: 'ledger_poster', ttl_days: 1 }),
      status: 201,
      observe: () => read(`/v1/sub-tenants/${id.subTenant}/keys`, 'partner'),
    },
    {
      method: 'GET',
      route: '/v1/sub-tenants/{id}/keys',
      role: 'partner',
      path: () => `/v1/sub-tenants/${id.subTenant}/keys`,
      status: 200,
    },
    {
      method: 'DELETE',
      route: '/v1/sub-tenants/{id}/keys/{key_id}',
      role: 'partner',
      path: () => `/v1/sub-tenants/${id.subTenant}/keys/${id.key}`,
      status: 200,
      observe: async () => ({
        keys: await read(`/v1/sub-tenants/${id.subTenant}/keys`, 'partner'),
        revokedKeyAuthenticates: (await client(h.url, id.keySecret).get('/v1/asset-types')).status,
      }),
    },
  ];

  it('when the table is compared with the ledger router, then it has exactly one row per authenticated route', () => {
    const shape = (path: string) => path.replace(/\{[^}]+\}|:[A-Za-z_]+/g, '{}');
    const served = ledgerRouter({
      pool: h.pool,
      batchers: createLedgerBatchers(h.pool),
      keys: new RememberedKeys(),
    })
      .stack.flatMap((layer) =>
        layer.methods
          .filter((method) => method !== 'HEAD')
          .map((method) => `${method} ${shape(String(layer.path))}`),
      )
      .sort();
    const table = rows.map((row) => `${row.method} ${shape(row.route)}`);
    expect(new Set(table).size).toBe(table.length);
    expect([...table].sort()).toEqual(served);
  });

  it.each(rows)(
    'when $method $route is called by a key of any role but $role, then 403 FORBIDDEN and nothing changed; the $role key then gets $status',
    async (row) => {
      const path = row.path();
      const body = row.body?.();
      // One Idempotency-Key for every attempt: a refused call must not have claimed it either.
      const key = row.method === 'GET' ? null : newKey();
      const before = await row.observe?.();

      for (const who of ROLES.filter((role) => role !== row.role)) {
        const refused = await call(h.url, row.method, path, t[who].token, body, key);
        expect([who, row.method, path, refused.status]).toEqual([who, row.method, path, 403]);
        expect(refused.body).toEqual({
          error: expect.objectContaining({ code: 'FORBIDDEN', message: expect.any(String) }),
        });
      }
      if (row.observe) expect(await row.observe()).toEqual(before);

      const allowed = await call(h.url, row.method, path, t[row.role].token, body, key);
      expect([row.role, row.method, path, allowed.status, allowed.body?.error]).toEqual([
        row.role,
        row.method,
        path,
        row.status,
        undefined,
      ]);
      expect(allowed.headers.get('idempotent-replayed')).toBeNull();
      // The observation sees what the allowed call did, so "nothing changed" above was not vacuous.
      if (row.observe) expect(await row.observe()).not.toEqual(before);
    },
  );

  it('when the wrong-role calls are over, then the settled holds are as the poster left them', async () => {
    expect((await read(`/v1/transactions/${id.holdToCommit}`)).state).toBe('committed');
    expect((await read(`/v1/transactions/${id.holdToVoid}`)).state).toBe('voided');
    expect((await client(h.url, id.keySecret).get('/v1/asset-types')).status).toBe(401);
  });
});
