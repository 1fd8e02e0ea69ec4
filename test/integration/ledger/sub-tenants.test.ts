/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument -- JSON replies in tests */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { v7 as uuidv7 } from 'uuid';
import { sql } from '../../../db/pool';
import { withSystem } from '../../../db/ledger/context';
import { call, client, LedgerHarness, newKey, type TenantClients } from './support';

jest.setTimeout(60_000);

describe('ledger sub-tenants and their keys', () => {
  const h = new LedgerHarness();
  let root: TenantClients;
  beforeAll(async () => {
    await h.start();
    root = await h.tenant('platform-co');
  });
  afterAll(() => h.stop());

  const newSubTenant = async (name = 'client') => {
    const reply = await root.partner.post('/v1/sub-tenants', {
      name,
      kind: 'production',
      contact_email: 'ops@client.example',
    });
    expect(reply.status).toBe(201);
    return reply.body;
  };
  const keyFor = async (subTenantId: string, role: string) => {
    const reply = await root.partner.post(`/v1/sub-tenants/${subTenantId}/keys`, {
      label: role,
      role,
      ttl_days: 30,
    });
    expect(reply.status).toBe(201);
    return client(h.url, reply.body.secret as string);
  };

  it('when a partner creates a sub-tenant, then 201 shows it under its parent, and it is listed newest first', async () => {
    const created = await newSubTenant('alpha');
    expect(created).toEqual({
      sub_tenant_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      parent_tenant_id: root.tenantId,
      name: 'alpha',
      kind: 'production',
      contact_email: 'ops@client.example',
      status: 'active',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const second = await newSubTenant('beta');
    const listed = await root.partner.get('/v1/sub-tenants?limit=1');
    expect(listed.body.sub_tenants[0].sub_tenant_id).toBe(second.sub_tenant_id);
    expect(listed.body.next_cursor).toBe(second.sub_tenant_id);
  });

  it('when a sub-tenant request is malformed or oversized, then 422 INVALID_TENANT; name 255 passes', async () => {
    const ok = await root.partner.post('/v1/sub-tenants', {
      name: 'n'.repeat(255),
      kind: 'sandbox',
      contact_email: 'a@b.co',
    });
    expect(ok.status).toBe(201);
    for (const body of [
      { name: 'n'.repeat(256), kind: 'sandbox', contact_email: 'a@b.co' },
      { name: 'x', kind: 'staging', contact_email: 'a@b.co' },
      { name: 'x', kind: 'sandbox', contact_email: 'not-an-email' },
      { name: 'x', kind: 'sandbox', contact_email: `${'a'.repeat(250)}@b.com` },
      { kind: 'sandbox', contact_email: 'a@b.co' },
    ]) {
      const reply = await root.partner.post('/v1/sub-tenants', body);
      expect(reply.status).toBe(422);
      expect(reply.body.error.code).toBe('INVALID_TENANT');
    }
    const kindChange = await root.partner.patch(`/v1/sub-tenants/${ok.body.sub_tenant_id}`, {
      kind: 'production',
    });
    expect(kindChange.body.error.code).toBe('IMMUTABLE_FIELD');
  });

  it('when contact_email is exactly 255 chars it is stored as sent; 256 chars are 422 INVALID_TENANT and nothing is made', async () => {
    const atLimit = `${'a'.repeat(249)}@b.com`;
    expect([...atLimit]).toHaveLength(255);
    const ok = await root.partner.post('/v1/sub-tenants', {
      name: 'email-255',
      kind: 'sandbox',
      contact_email: atLimit,
    });
    expect(ok.status).toBe(201);
    expect(ok.body.contact_email).toBe(atLimit);
    // Chars, not UTF-16 units: 255 chars of which 10 are outside the BMP (265 units) still pass.
    const astral = `${'😀'.repeat(10)}${'a'.repeat(239)}@b.com`;
    expect([...astral]).toHaveLength(255);
    const astralOk = await root.partner.post('/v1/sub-tenants', {
      name: 'email-255-astral',
      kind: 'sandbox',
      contact_email: astral,
    });
    expect(astralOk.status).toBe(201);
    expect(astralOk.body.contact_email).toBe(astral);

    const before = (await root.partner.get('/v1/sub-tenants?limit=1000')).body.sub_tenants.length;
    const pastLimit = `${'a'.repeat(250)}@b.com`;
    expect([...pastLimit]).toHaveLength(256);
    const past = await root.partner.post('/v1/sub-tenants', {
      name: 'email-256',
      kind: 'sandbox',
      contact_email: pastLimit,
    });
    expect(past.status).toBe(422);
    expect(past.body.error.code).toBe('INVALID_TENANT');
    expect(past.body.error.message).toMatch(/contact_email/);
    expect((await root.partner.get('/v1/sub-tenants?limit=1000')).body.sub_tenants).toHaveLength(
      before,
    );
  });

  it("when a client's key transacts, then it works on the client's own ledger, and the partner key cannot read or write it", async () => {
    const sub = await newSubTenant();
    const admin = await keyFor(sub.sub_tenant_id, 'ledger_admin');
    const reader = await keyFor(sub.sub_tenant_id, 'ledger_reader');
    const asset = await admin.post('/v1/asset-types', { code: 'USD', kind: 'fiat', scale: 2 });
    expect(asset.status).toBe(201);
    const account = await admin.post('/v1/accounts', {
      asset_type_id: asset.body.asset_type_id,
      normal_side: 'debit',
    });
    expect((await reader.get(`/v1/accounts/${account.body.account_id}`)).status).toBe(200);
    expect(
      (await root.partner.get(`/v1/accounts/${account.body.account_id}`)).body.error.code,
    ).toBe('FORBIDDEN');
    // The root's own reader sees its own ledger only: the client's account is another tenant's.
    expect((await root.reader.get(`/v1/accounts/${account.body.account_id}`)).status).toBe(404);
    const sibling = await keyFor((await newSubTenant('sibling')).sub_tenant_id, 'ledger_reader');
    expect((await sibling.get(`/v1/accounts/${account.body.account_id}`)).body.error.code).toBe(
      'ACCOUNT_NOT_FOUND',
    );
  });

  it('when a sub-tenant or its parent is suspended, then its keys get 403 TENANT_SUSPENDED until reactivated', async () => {
    const sub = await newSubTenant();
    const reader = await keyFor(sub.sub_tenant_id, 'ledger_reader');
    expect(
      (await root.partner.patch(`/v1/sub-tenants/${sub.sub_tenant_id}`, { status: 'suspended' }))
        .body.status,
    ).toBe('suspended');
    expect((await reader.get('/v1/asset-types')).body.error.code).toBe('TENANT_SUSPENDED');
    await root.partner.patch(`/v1/sub-tenants/${sub.sub_tenant_id}`, {
      status: 'active',
      name: 'renamed',
    });
    expect((await reader.get('/v1/asset-types')).status).toBe(200);

    const otherRoot = await h.tenant('other-platform');
    const child = await otherRoot.partner.post('/v1/sub-tenants', {
      name: 'c',
      kind: 'sandbox',
      contact_email: 'c@d.ef',
    });
    const childKey = await otherRoot.partner.post(
      `/v1/sub-tenants/${child.body.sub_tenant_id}/keys`,
      { role: 'ledger_reader' },
    );
    const childReader = client(h.url, childKey.body.secret as string);
    const cli = `${__dirname}/../../../scripts/ledger-admin`;
    await promisify(execFile)(cli, ['tenant', 'suspend', otherRoot.tenantId]);
    expect((await childReader.get('/v1/asset-types')).body.error.code).toBe('TENANT_SUSPENDED');
    await promisify(execFile)(cli, ['tenant', 'activate', otherRoot.tenantId]);
    expect((await childReader.get('/v1/asset-types')).status).toBe(200);
  });

  it('when a partner issues, lists and revokes keys, then the secret shows once, listing hides it, and revocation takes effect at once', async () => {
    const sub = await newSubTenant();
    const issued = await root.partner.post(`/v1/sub-tenants/${sub.sub_tenant_id}/keys`, {
      label: 'poster',
      role: 'ledger_poster',
      ttl_days: 1,
    });
    expect(issued.body).toEqual({
      key_id: expect.any(String),
      sub_tenant_id: sub.sub_tenant_id,
      role: 'ledger_poster',
      label: 'poster',
      created_at: expect.any(String),
      expires_at: expect.any(String),
      revoked_at: null,
      secret: expect.stringMatching(/^lk_/),
    });
    const listed = await root.partner.get(`/v1/sub-tenants/${sub.sub_tenant_id}/keys`);
    expect(listed.body.keys).toHaveLength(1);
    expect(listed.body.keys[0]).not.toHaveProperty('secret');
    expect(listed.body.next_cursor).toBeNull();
    const poster = client(h.url, issued.body.secret as string);
    expect((await poster.post('/v1/transactions', { entries: [] })).body.error.code).toBe(
      'ENTRY_COUNT_OUT_OF_RANGE',
    );
    const revoked = await root.partner.del(
      `/v1/sub-tenants/${sub.sub_tenant_id}/keys/${issued.body.key_id}`,
    );
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked_at).not.toBeNull();
    expect((await poster.post('/v1/transactions', { entries: [] })).status).toBe(401);
    expect(
      (await root.partner.del(`/v1/sub-tenants/${sub.sub_tenant_id}/keys/${uuidv7()}`)).body.error
        .code,
    ).toBe('KEY_NOT_FOUND');
  });

  it("when the key's row stays locked past the lock budget, then revocation is 502 REVOCATION_FAILED and nothing changed: the key still works, and the retry with the same Idempotency-Key revokes it", async () => {
    const sub = await newSubTenant();
    const issued = await root.partner.post(`/v1/sub-tenants/${sub.sub_tenant_id}/keys`, {
      label: 'reader',
      role: 'ledger_reader',
      ttl_days: 1,
    });
    const keyId = issued.body.key_id as string;
    const reader = client(h.url, issued.body.secret as string);
    expect((await reader.get('/v1/asset-types')).status).toBe(200);
    const path = `/v1/sub-tenants/${sub.sub_tenant_id}/keys/${keyId}`;
    const idempotencyKey = newKey();

    // Another session holds the key's row (withTenant gives the revocation LOCK_TIMEOUT_MS).
    const refused = await withSystem(h.pool, async (tx) => {
      await tx.query(sql.unsafe`SELECT 1 FROM ledger.api_keys WHERE key_id = ${keyId} FOR UPDATE`);
      return root.partner.del(path, idempotencyKey);
    });
    expect([refused.status, refused.body.error.code]).toEqual([502, 'REVOCATION_FAILED']);
    const doc = (await call(h.url, 'GET', '/openapi.json', null)).body;
    expect(
      doc.paths['/v1/sub-tenants/{sub_tenant_id}/keys/{key_id}'].delete.responses['502'],
    ).toBeDefined();

    // Nothing changed: the key authenticates and is listed unrevoked.
    expect((await reader.get('/v1/asset-types')).status).toBe(200);
    const listed = await root.partner.get(`/v1/sub-tenants/${sub.sub_tenant_id}/keys`);
    expect(listed.body.keys).toEqual([
      expect.objectContaining({ key_id: keyId, revoked_at: null }),
    ]);

    // A 5xx is not remembered: the retry with the same Idempotency-Key runs and revokes.
    const revoked = await root.partner.del(path, idempotencyKey);
    expect(revoked.status).toBe(200);
    expect(revoked.headers.get('idempotent-replayed')).toBeNull();
    expect(revoked.body.revoked_at).not.toBeNull();
    expect((await reader.get('/v1/asset-types')).status).toBe(401);
  });

  it('when a key request is malformed, then 422 INVALID_KEY; label 255 passes, 256 fails; a partner role for a client is refused', async () => {
    const sub = await newSubTenant();
    expect(
      (
        await root.partner.post(`/v1/sub-tenants/${sub.sub_tenant_id}/keys`, {
          label: 'l'.repeat(255),
          role: 'ledger_reader',
        })
      ).status,
    ).toBe(201);
    for (const body of [
      { label: 'l'.repeat(256), role: 'ledger_reader' },
      { role: 'ledger_partner' },
      { role: 'root' },
      { role: 'ledger_reader', ttl_days: 0 },
      { role: 'ledger_reader', ttl_days: 1.5 },
    ]) {
      const reply = await root.partner.post(`/v1/sub-tenants/${sub.sub_tenant_id}/keys`, body);
      expect([reply.status, reply.body.error.code]).toEqual([422, 'INVALID_KEY']);
    }
  });

  it("when the sub-tenant is someone else's or a sub-tenant tries to nest, then 404 SUB_TENANT_NOT_FOUND / 422 INVALID_TENANT", async () => {
    const other = await h.tenant();
    const theirs = await other.partner.post('/v1/sub-tenants', {
      name: 'x',
      kind: 'sandbox',
      contact_email: 'x@y.zz',
    });
    const id = theirs.body.sub_tenant_id as string;
    expect(
      (await root.partner.patch(`/v1/sub-tenants/${id}`, { name: 'mine' })).body.error.code,
    ).toBe('SUB_TENANT_NOT_FOUND');
    expect((await root.partner.get(`/v1/sub-tenants/${id}/keys`)).body.error.code).toBe(
      'SUB_TENANT_NOT_FOUND',
    );
    expect(
      (await root.partner.post(`/v1/sub-tenants/${id}/keys`, { role: 'ledger_reader' })).status,
    ).toBe(404);
    // An operator-made partner key on a sub-tenant still cannot nest (depth capped at one).
    const nestedPartner = client(h.url, await h.key(id, 'ledger_partner'));
    const nested = await nestedPartner.post('/v1/sub-tenants', {
      name: 'grandchild',
      kind: 'sandbox',
      contact_email: 'g@c.de',
    });
    expect(nested.status).toBe(422);
    expect(nested.body.error.code).toBe('INVALID_TENANT');
  });
});
