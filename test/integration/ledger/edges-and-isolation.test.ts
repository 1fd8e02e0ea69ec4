/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument -- JSON replies in tests */
import { v7 as uuidv7 } from 'uuid';
import { withSystem } from '../../../db/ledger/context';
import { insertTenant } from '../../../db/ledger/tenants';
import { issueKey } from '../../../services/ledger/credentials';
import {
  client,
  LedgerHarness,
  newKey,
  transfer,
  type LedgerClient,
  type Reply,
  type TenantClients,
} from './support';

jest.setTimeout(60_000);

const KIB = 1024;
type Row = Record<string, unknown>;
const DAY_MS = 24 * 3600 * 1000;

/** The ledger clients of one tenant, root or sub-tenant (a sub-tenant has no partner key). */
interface Ledger {
  tenantId: string;
  admin: LedgerClient;
  poster: LedgerClient;
  reader: LedgerClient;
}

/**
 * Cross-tenant ids (spec: 404, never 403, with the route's own *_NOT_FOUND code) and the edges of
 * the Limits table not covered elsewhere. Intruders are an unrelated root tenant, a sibling
 * sub-tenant of the same partner, and the owner's own parent: all three are other tenants.
 */
describe('ledger edges and cross-tenant isolation', () => {
  const h = new LedgerHarness();
  let root: TenantClients, stranger: TenantClients, owner: Ledger, sibling: Ledger;

  const subTenant = async (partner: LedgerClient, name: string) => {
    const created = await partner.post('/v1/sub-tenants', {
      name,
      kind: 'sandbox',
      contact_email: 'ops@client.example',
    });
    expect(created.status).toBe(201);
    return created.body.sub_tenant_id as string;
  };
  const issue = async (partner: LedgerClient, subTenantId: string, role: string) => {
    const reply = await partner.post(`/v1/sub-tenants/${subTenantId}/keys`, {
      label: role,
      role,
      ttl_days: 30,
    });
    expect(reply.status).toBe(201);
    return { keyId: reply.body.key_id as string, client: client(h.url, reply.body.secret) };
  };
  const subLedger = async (name: string): Promise<Ledger> => {
    const tenantId = await subTenant(root.partner, name);
    const [admin, poster, reader] = await Promise.all(
      ['ledger_admin', 'ledger_poster', 'ledger_reader'].map((role) =>
        issue(root.partner, tenantId, role),
      ),
    );
    return { tenantId, admin: admin!.client, poster: poster!.client, reader: reader!.client };
  };
  /** An asset type, a floorless debit-normal cash account and a wallet funded with `funded`. */
  const fundedWallet = async (l: Ledger, funded = '10.00') => {
    const usd = await h.assetType(l);
    const cash = await h.account(l, usd, { name: 'cash', balance_floor: null });
    const wallet = await h.account(l, usd, { name: 'wallet' });
    expect((await l.poster.post('/v1/transactions', transfer(cash, wallet, funded))).status).toBe(
      201,
    );
    return { usd, cash, wallet };
  };
  const inFuture = (ms: number) => new Date(Date.now() + ms).toISOString();
  const expectRefused = (reply: Reply, status: number, code: string) =>
    expect([reply.status, reply.body?.error?.code]).toEqual([status, code]);
  /** The balance less `as_of`, which for a sync account is the instant of the read. */
  const balanceOf = async (l: Ledger, accountId: string) => {
    const reply = await l.reader.get(`/v1/accounts/${accountId}/balance`);
    expect(reply.status).toBe(200);
    const { as_of: _asOf, ...rest } = reply.body;
    return rest;
  };
  const entryCount = async (l: Ledger, accountId: string) => {
    const reply = await l.reader.get(`/v1/accounts/${accountId}/entries?limit=1000`);
    expect(reply.status).toBe(200);
    return (reply.body.entries as unknown[]).length;
  };

  beforeAll(async () => {
    await h.start();
    root = await h.tenant('platform-co');
    stranger = await h.tenant('stranger-co');
    owner = await subLedger('owner');
    sibling = await subLedger('sibling');
  });
  afterAll(() => h.stop());

  describe('cross-tenant ids answer 404, never 403', () => {
    const intruders = () => [
      { who: 'an unrelated tenant', l: stranger },
      { who: 'a sibling sub-tenant', l: sibling },
      { who: 'the parent tenant', l: root },
    ];

    it("when a tenant asks for another tenant's account balance as of an instant, then 404 ACCOUNT_NOT_FOUND on either basis", async () => {
      const { wallet } = await fundedWallet(owner, '5.00');
      const at = new Date(Date.now() + 60_000).toISOString();
      for (const basis of ['effective', 'recorded']) {
        const path = `/v1/accounts/${wallet}/balance-as-of?at=${at}&basis=${basis}`;
        const own = await owner.reader.get(path);
        expect(own.status).toBe(200);
        expect(own.body).toMatchObject({ account_id: wallet, balance: '5.00', entry_count: 1 });
        for (const { who, l } of intruders()) {
          const reply = await l.reader.get(path);
          expect({ who, basis, status: reply.status, code: reply.body.error?.code }).toEqual({
            who,
            basis,
            status: 404,
            code: 'ACCOUNT_NOT_FOUND',
          });
        }
      }
    });

    it("when a tenant commits or voids another tenant's pending hold, then 404 TRANSACTION_NOT_FOUND and the hold is unchanged for its owner, who can still commit it", async () => {
      const { usd, wallet } = await fundedWallet(owner, '10.00');
      const payee = await h.account(owner, usd, { name: 'payee' });
      const hold = await owner.poster.post(
        '/v1/transactions',
        transfer(wallet, payee, '4.00', { pending: true, expires_at: inFuture(3_600_000) }),
      );
      expect([hold.status, hold.body.state]).toEqual([201, 'pending']);
      const id = hold.body.transaction_id as string;
      const snapshot = async () => ({
        transaction: (await owner.reader.get(`/v1/transactions/${id}`)).body,
        wallet: await balanceOf(owner, wallet),
        payee: await balanceOf(owner, payee),
      });
      const before = await snapshot();
      expect(before.transaction).toMatchObject({ state: 'pending', finalized_at: null });
      expect(before.wallet).toMatchObject({ available: '6.00', pending: { credits: '4.00' } });

      for (const { who, l } of intruders()) {
        for (const action of ['commit', 'void']) {
          const reply = await l.poster.post(`/v1/transactions/${id}/${action}`);
          expect({ who, action, status: reply.status, code: reply.body.error?.code }).toEqual({
            who,
            action,
            status: 404,
            code: 'TRANSACTION_NOT_FOUND',
          });
        }
      }

      expect(await snapshot()).toEqual(before);
      const committed = await owner.poster.post(`/v1/transactions/${id}/commit`);
      expect([committed.status, committed.body.state]).toEqual([200, 'committed']);
      expect((await owner.reader.get(`/v1/accounts/${payee}/balance`)).body.available).toBe('4.00');
    });

    it("when a tenant patches another tenant's asset type, then 404 ASSET_TYPE_NOT_FOUND and the asset type is unchanged", async () => {
      const usd = await h.assetType(owner);
      expect(
        (await owner.admin.patch(`/v1/asset-types/${usd}`, { description: 'mine' })).status,
      ).toBe(200);
      const listed = async () =>
        ((await owner.reader.get('/v1/asset-types')).body.asset_types as Row[]).find(
          (a) => a.asset_type_id === usd,
        );
      const before = await listed();
      expect(before).toMatchObject({ status: 'active', description: 'mine' });

      for (const { who, l } of intruders()) {
        for (const body of [
          { status: 'superseded', description: 'theirs' },
          { description: 'x' },
        ]) {
          const reply = await l.admin.patch(`/v1/asset-types/${usd}`, body);
          expect({ who, body, status: reply.status, code: reply.body.error?.code }).toEqual({
            who,
            body,
            status: 404,
            code: 'ASSET_TYPE_NOT_FOUND',
          });
        }
      }

      expect(await listed()).toEqual(before);
      // Still active: the owner can open accounts on it.
      await h.account(owner, usd);
    });

    it("when a partner revokes a key of another partner's sub-tenant, then 404 (SUB_TENANT_NOT_FOUND by its path, KEY_NOT_FOUND under its own sub-tenant) and the key keeps working", async () => {
      const victim = await issue(root.partner, owner.tenantId, 'ledger_reader');
      expect((await victim.client.get('/v1/asset-types')).status).toBe(200);
      const strangersClient = await subTenant(stranger.partner, 'strangers-client');

      const byPath = await stranger.partner.del(
        `/v1/sub-tenants/${owner.tenantId}/keys/${victim.keyId}`,
      );
      expectRefused(byPath, 404, 'SUB_TENANT_NOT_FOUND');
      const underOwn = await stranger.partner.del(
        `/v1/sub-tenants/${strangersClient}/keys/${victim.keyId}`,
      );
      expectRefused(underOwn, 404, 'KEY_NOT_FOUND');
      // The same partner, through the wrong one of its own sub-tenants: still not that key.
      const underSibling = await root.partner.del(
        `/v1/sub-tenants/${sibling.tenantId}/keys/${victim.keyId}`,
      );
      expectRefused(underSibling, 404, 'KEY_NOT_FOUND');

      expect((await victim.client.get('/v1/asset-types')).status).toBe(200);
      const keys = (await root.partner.get(`/v1/sub-tenants/${owner.tenantId}/keys?limit=1000`))
        .body.keys as Row[];
      expect(keys.find((k) => k.key_id === victim.keyId)).toMatchObject({ revoked_at: null });
    });
  });

  describe('page size: limit at most 1000', () => {
    const expectLimitRefused = (reply: Reply) => {
      expectRefused(reply, 422, 'INVALID_REQUEST');
      expect(reply.body.error.details).toEqual(
        expect.arrayContaining([expect.objectContaining({ field: 'limit' })]),
      );
    };

    it("when an account's entries are listed with limit 1000, then a full page of 1000 comes with a next_cursor; limit 1001 is 422 INVALID_REQUEST", async () => {
      const t = await h.tenant();
      const usd = await h.assetType(t);
      const cash = await h.account(t, usd, { balance_floor: null });
      const a = await h.account(t, usd);
      // 11 transactions of 99 debit legs on a and one credit leg on cash: 1089 entries of a.
      for (let i = 0; i < 11; i++) {
        const reply = await t.poster.post('/v1/transactions', {
          entries: [
            ...Array.from({ length: 99 }, () => ({
              account_id: a,
              direction: 'debit',
              amount: '0.01',
            })),
            { account_id: cash, direction: 'credit', amount: '0.99' },
          ],
        });
        expect(reply.status).toBe(201);
      }
      const first = await t.reader.get(`/v1/accounts/${a}/entries?limit=1000`);
      expect(first.status).toBe(200);
      expect(first.body.entries).toHaveLength(1000);
      expect(first.body.next_cursor).toBe(first.body.entries[999].id);
      const rest = await t.reader.get(
        `/v1/accounts/${a}/entries?limit=1000&cursor=${first.body.next_cursor}`,
      );
      expect(rest.body.entries).toHaveLength(89);
      expect(rest.body.next_cursor).toBeNull();

      expectLimitRefused(await t.reader.get(`/v1/accounts/${a}/entries?limit=1001`));
      expectLimitRefused(
        await t.reader.get(`/v1/accounts/${a}/entries?limit=1001&state=committed`),
      );
    });

    it('when sub-tenants are listed with limit 1000, then a full page of 1000 comes with a next_cursor; limit 1001 is 422 INVALID_REQUEST', async () => {
      const partner = await h.tenant('many-clients');
      // 1001 clients, made as the operator would (1001 API calls would only slow the test).
      await withSystem(h.pool, async (tx) => {
        for (let i = 0; i < 1001; i++)
          await insertTenant(tx, {
            tenantId: uuidv7(),
            parentId: partner.tenantId,
            name: `client-${i}`,
            kind: 'sandbox',
            contactEmail: null,
          });
      });
      const first = await partner.partner.get('/v1/sub-tenants?limit=1000');
      expect(first.status).toBe(200);
      expect(first.body.sub_tenants).toHaveLength(1000);
      expect(first.body.next_cursor).toBe(first.body.sub_tenants[999].sub_tenant_id);
      const rest = await partner.partner.get(
        `/v1/sub-tenants?limit=1000&cursor=${first.body.next_cursor}`,
      );
      expect(rest.body.sub_tenants).toHaveLength(1);
      expect(rest.body.next_cursor).toBeNull();

      expectLimitRefused(await partner.partner.get('/v1/sub-tenants?limit=1001'));
    });

    it("when a sub-tenant's keys are listed with limit 1000, then a full page of 1000 comes with a next_cursor; limit 1001 is 422 INVALID_REQUEST", async () => {
      const sub = await subTenant(root.partner, 'many-keys');
      await withSystem(h.pool, async (tx) => {
        for (let i = 0; i < 1001; i++)
          await issueKey(tx, { tenantId: sub, role: 'ledger_reader', label: `k${i}`, ttlDays: 1 });
      });
      const first = await root.partner.get(`/v1/sub-tenants/${sub}/keys?limit=1000`);
      expect(first.status).toBe(200);
      expect(first.body.keys).toHaveLength(1000);
      expect(first.body.next_cursor).toBe(first.body.keys[999].key_id);
      const rest = await root.partner.get(
        `/v1/sub-tenants/${sub}/keys?limit=1000&cursor=${first.body.next_cursor}`,
      );
      expect(rest.body.keys).toHaveLength(1);
      expect(rest.body.next_cursor).toBeNull();

      expectLimitRefused(await root.partner.get(`/v1/sub-tenants/${sub}/keys?limit=1001`));
    });
  });

  describe('metadata: at most 16 KiB canonical JSON', () => {
    // {"k":"…"} is 8 bytes of framing: a value of 16 KiB - 8 bytes is exactly 16 KiB canonical.
    const atLimit = { k: 'x'.repeat(16 * KIB - 8) };
    const pastLimit = { k: 'x'.repeat(16 * KIB - 7) };
    // Bytes of UTF-8, not chars: é is 2 bytes, so 8188 of them are 16 KiB with the framing.
    const atLimitWide = { k: 'é'.repeat((16 * KIB - 8) / 2) };
    const pastLimitWide = { k: `${'é'.repeat((16 * KIB - 8) / 2)}x` };

    it('when a posting carries metadata of exactly 16 KiB canonical it posts and keeps it; one byte more is 422 INVALID_METADATA and nothing is written', async () => {
      const { cash, wallet } = await fundedWallet(owner, '1.00');
      for (const metadata of [atLimit, atLimitWide]) {
        const posted = await owner.poster.post(
          '/v1/transactions',
          transfer(cash, wallet, '1.00', { metadata }),
        );
        expect(posted.status).toBe(201);
        const record = await owner.reader.get(`/v1/transactions/${posted.body.transaction_id}`);
        expect(record.body.metadata).toEqual(metadata);
      }
      // Measured in canonical form: whitespace in the body does not count.
      const spaced = `{"entries": ${JSON.stringify(transfer(cash, wallet, '1.00').entries)}, "metadata": {${' '.repeat(2 * KIB)}"k" : ${JSON.stringify(atLimit.k)}${' '.repeat(2 * KIB)}}}`;
      expect(spaced.length).toBeGreaterThan(16 * KIB + 4 * KIB);
      expect((await owner.poster.post('/v1/transactions', spaced)).status).toBe(201);

      const balanceBefore = await balanceOf(owner, wallet);
      expect(balanceBefore.available).toBe('4.00');
      const entriesBefore = await entryCount(owner, wallet);
      for (const metadata of [pastLimit, pastLimitWide]) {
        for (const extra of [{}, { pending: true, expires_at: inFuture(3_600_000) }]) {
          const refused = await owner.poster.post(
            '/v1/transactions',
            transfer(cash, wallet, '1.00', { metadata, ...extra }),
          );
          expectRefused(refused, 422, 'INVALID_METADATA');
        }
      }
      expect(await balanceOf(owner, wallet)).toEqual(balanceBefore);
      expect(await entryCount(owner, wallet)).toBe(entriesBefore);
    });

    it('when an account is patched with metadata of exactly 16 KiB canonical it is stored; one byte more is 422 INVALID_METADATA and nothing changes, not even the name sent with it', async () => {
      const usd = await h.assetType(owner);
      const id = await h.account(owner, usd, { name: 'before', metadata: { v: 1 } });
      for (const metadata of [atLimitWide, atLimit]) {
        const patched = await owner.admin.patch(`/v1/accounts/${id}`, { metadata });
        expect(patched.status).toBe(200);
        expect(patched.body.metadata).toEqual(metadata);
      }
      const before = (await owner.reader.get(`/v1/accounts/${id}`)).body;
      expect(before).toMatchObject({ name: 'before', metadata: atLimit });

      for (const metadata of [pastLimit, pastLimitWide]) {
        const refused = await owner.admin.patch(`/v1/accounts/${id}`, {
          name: 'after',
          metadata,
        });
        expectRefused(refused, 422, 'INVALID_METADATA');
      }
      expect((await owner.reader.get(`/v1/accounts/${id}`)).body).toEqual(before);
    });
  });

  describe('lengths and ranges', () => {
    it('when an account is renamed to 255 chars it is stored; 256 chars are 422 INVALID_ACCOUNT and nothing changes', async () => {
      const usd = await h.assetType(owner);
      const id = await h.account(owner, usd, { name: 'before', metadata: { v: 1 } });
      // Chars, not UTF-16 units: 255 chars outside the BMP (510 units) pass too.
      for (const name of ['😀'.repeat(255), 'n'.repeat(255)]) {
        const patched = await owner.admin.patch(`/v1/accounts/${id}`, { name });
        expect([patched.status, patched.body.name]).toEqual([200, name]);
      }
      const before = (await owner.reader.get(`/v1/accounts/${id}`)).body;
      expect(before.name).toBe('n'.repeat(255));

      for (const name of ['m'.repeat(256), '😀'.repeat(256)]) {
        const refused = await owner.admin.patch(`/v1/accounts/${id}`, {
          name,
          metadata: { v: 2 },
        });
        expectRefused(refused, 422, 'INVALID_ACCOUNT');
      }
      expect((await owner.reader.get(`/v1/accounts/${id}`)).body).toEqual(before);
    });

    it('when a sub-tenant is renamed to 255 chars it is stored; 256 chars are 422 INVALID_TENANT and nothing changes, not even the status sent with it', async () => {
      const id = await subTenant(root.partner, 'before');
      const reader = (await issue(root.partner, id, 'ledger_reader')).client;
      const listed = async () =>
        ((await root.partner.get('/v1/sub-tenants?limit=1000')).body.sub_tenants as Row[]).find(
          (s) => s.sub_tenant_id === id,
        );
      const patched = await root.partner.patch(`/v1/sub-tenants/${id}`, { name: 'n'.repeat(255) });
      expect([patched.status, patched.body.name]).toEqual([200, 'n'.repeat(255)]);
      const before = await listed();
      expect(before).toMatchObject({ name: 'n'.repeat(255), status: 'active' });

      const refused = await root.partner.patch(`/v1/sub-tenants/${id}`, {
        name: 'm'.repeat(256),
        status: 'suspended',
      });
      expectRefused(refused, 422, 'INVALID_TENANT');
      expect(await listed()).toEqual(before);
      expect((await reader.get('/v1/asset-types')).status).toBe(200);
    });

    it('when an asset type is created with a 1024-char description it is stored; 1025 chars are 422 INVALID_DESCRIPTION and nothing is created', async () => {
      const codes = {
        ok: `D1024-${newKey()}`.slice(0, 64),
        past: `D1025-${newKey()}`.slice(0, 64),
      };
      const created = await owner.admin.post('/v1/asset-types', {
        code: codes.ok,
        kind: 'fiat',
        scale: 2,
        description: 'd'.repeat(1024),
      });
      expect([created.status, created.body.description]).toEqual([201, 'd'.repeat(1024)]);
      const refused = await owner.admin.post('/v1/asset-types', {
        code: codes.past,
        kind: 'fiat',
        scale: 2,
        description: 'd'.repeat(1025),
      });
      expectRefused(refused, 422, 'INVALID_DESCRIPTION');
      const listedCodes = (
        (await owner.reader.get('/v1/asset-types')).body.asset_types as Row[]
      ).map((a) => a.code);
      expect(listedCodes).toContain(codes.ok);
      expect(listedCodes).not.toContain(codes.past);
    });

    it('when a key is issued with ttl_days 3650 it expires 3650 days on and works; 3651 is 422 INVALID_KEY and no key is made', async () => {
      const sub = await subTenant(root.partner, 'long-lived');
      const startedAt = Date.now();
      const issued = await root.partner.post(`/v1/sub-tenants/${sub}/keys`, {
        label: 'decade',
        role: 'ledger_reader',
        ttl_days: 3650,
      });
      expect(issued.status).toBe(201);
      const expiresAt = Date.parse(issued.body.expires_at);
      expect(expiresAt).toBeGreaterThanOrEqual(startedAt + 3650 * DAY_MS - 5_000);
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3650 * DAY_MS + 5_000);
      expect((await client(h.url, issued.body.secret).get('/v1/asset-types')).status).toBe(200);

      const keysBefore = (await root.partner.get(`/v1/sub-tenants/${sub}/keys`)).body.keys;
      expect(keysBefore).toHaveLength(1);
      const refused = await root.partner.post(`/v1/sub-tenants/${sub}/keys`, {
        label: 'too-long',
        role: 'ledger_reader',
        ttl_days: 3651,
      });
      expectRefused(refused, 422, 'INVALID_KEY');
      expect((await root.partner.get(`/v1/sub-tenants/${sub}/keys`)).body.keys).toEqual(keysBefore);
    });

    it("when a hold's expires_at is just under 366 days ahead it is placed; just past 366 days is 422 INVALID_EXPIRES_AT and nothing is written", async () => {
      const { usd, wallet } = await fundedWallet(owner, '10.00');
      const payee = await h.account(owner, usd, { name: 'payee' });
      const expiresAt = inFuture(366 * DAY_MS - 60_000);
      const placed = await owner.poster.post(
        '/v1/transactions',
        transfer(wallet, payee, '1.00', { pending: true, expires_at: expiresAt }),
      );
      expect([placed.status, placed.body.state]).toEqual([201, 'pending']);
      const record = await owner.reader.get(`/v1/transactions/${placed.body.transaction_id}`);
      expect(Date.parse(record.body.expires_at)).toBe(Date.parse(expiresAt));

      const balanceBefore = await balanceOf(owner, wallet);
      expect(balanceBefore).toMatchObject({ available: '9.00', pending: { credits: '1.00' } });
      const entriesBefore = await entryCount(owner, wallet);
      const refused = await owner.poster.post(
        '/v1/transactions',
        transfer(wallet, payee, '1.00', {
          pending: true,
          expires_at: inFuture(366 * DAY_MS + 60_000),
        }),
      );
      expectRefused(refused, 422, 'INVALID_EXPIRES_AT');
      expect(await balanceOf(owner, wallet)).toEqual(balanceBefore);
      expect(await entryCount(owner, wallet)).toBe(entriesBefore);

      // No year-long hold left behind.
      const voided = await owner.poster.post(`/v1/transactions/${placed.body.transaction_id}/void`);
      expect([voided.status, voided.body.state]).toEqual([200, 'voided']);
    });
  });
});
