/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call -- JSON replies in tests */
import { LEDGER_ERRORS } from '../../../services/ledger/errors';
import { sql } from '../../../db/pool';
import { withTenant } from '../../../db/ledger/context';
import { LedgerHarness, transfer, type TenantClients } from './support';

jest.setTimeout(30_000);

describe('ledger asset types and accounts', () => {
  const h = new LedgerHarness();
  let t: TenantClients;
  beforeAll(async () => {
    await h.start();
    t = await h.tenant();
  });
  afterAll(() => h.stop());

  it('when an asset type is created, then 201 returns id, code, kind, scale and it is listed unpaginated', async () => {
    const created = await t.admin.post('/v1/asset-types', {
      code: 'EUR',
      kind: 'fiat',
      scale: 2,
      description: 'euro',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      code: 'EUR',
      kind: 'fiat',
      scale: 2,
      status: 'active',
      description: 'euro',
    });
    expect(created.body.asset_type_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    const listed = await t.reader.get('/v1/asset-types');
    expect(listed.body.asset_types.map((a: { code: string }) => a.code)).toContain('EUR');
    expect(listed.body).not.toHaveProperty('next_cursor');
  });

  it('when a code is taken in the tenant, then 422 CONSTRAINT_VIOLATION naming it; another tenant may use the same code', async () => {
    const first = await t.admin.post('/v1/asset-types', { code: 'GBP', kind: 'fiat', scale: 2 });
    expect(first.status).toBe(201);
    const again = await t.admin.post('/v1/asset-types', { code: 'GBP', kind: 'credit', scale: 0 });
    expect([again.status, again.body.error.code, again.body.error.details]).toEqual([
      422,
      'CONSTRAINT_VIOLATION',
      { code: 'GBP' },
    ]);
    const gbp = (await t.reader.get('/v1/asset-types')).body.asset_types.filter(
      (a: { code: string }) => a.code === 'GBP',
    );
    expect(gbp).toMatchObject([{ kind: 'fiat', scale: 2 }]);
    const other = await h.tenant();
    expect(
      (await other.admin.post('/v1/asset-types', { code: 'GBP', kind: 'fiat', scale: 2 })).status,
    ).toBe(201);
  });

  it('when kind is not fiat/credit/inventory (another word, missing, not a string), then 422 INVALID_ASSET_TYPE; scale 0 and 12 pass, -1 and 13 fail', async () => {
    for (const kind of ['crypto', undefined, null, 7, ['fiat']]) {
      const bad = await t.admin.post('/v1/asset-types', { code: 'BTC', kind, scale: 8 });
      expect([bad.status, bad.body.error.code]).toEqual([422, 'INVALID_ASSET_TYPE']);
    }
    expect(
      (await t.reader.get('/v1/asset-types')).body.asset_types.map((a: { code: string }) => a.code),
    ).not.toContain('BTC');
    expect(
      (await t.admin.post('/v1/asset-types', { code: 'S0', kind: 'inventory', scale: 0 })).status,
    ).toBe(201);
    expect(
      (await t.admin.post('/v1/asset-types', { code: 'S12', kind: 'credit', scale: 12 })).status,
    ).toBe(201);
    for (const scale of [-1, 13, '2']) {
      const reply = await t.admin.post('/v1/asset-types', {
        code: `X${String(scale)}`,
        kind: 'fiat',
        scale,
      });
      expect(reply.status).toBe(422);
      expect(reply.body.error.code).toBe('INVALID_REQUEST');
      expect(reply.body.error.details[0].field).toBe('scale');
    }
  });

  it('when a PATCH names code, kind or scale, then 422 IMMUTABLE_FIELD; status and description change', async () => {
    const id = await h.assetType(t);
    const refused = await t.admin.patch(`/v1/asset-types/${id}`, { scale: 3 });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('IMMUTABLE_FIELD');
    const patched = await t.admin.patch(`/v1/asset-types/${id}`, {
      status: 'superseded',
      description: 'old',
    });
    expect(patched.body).toMatchObject({ status: 'superseded', description: 'old', scale: 2 });
    const missing = await t.admin.patch('/v1/asset-types/01a1ffb7-0000-7000-8000-000000000000', {
      status: 'active',
    });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('ASSET_TYPE_NOT_FOUND');
  });

  it('when the asset type is superseded, then a new account is 409 ASSET_TYPE_SUPERSEDED while existing ones keep posting', async () => {
    const usd = await h.assetType(t);
    const source = await h.account(t, usd, { normal_side: 'credit', balance_floor: null });
    const wallet = await h.account(t, usd);
    await t.admin.patch(`/v1/asset-types/${usd}`, { status: 'superseded' });
    const refused = await t.admin.post('/v1/accounts', {
      asset_type_id: usd,
      name: 'late',
      normal_side: 'debit',
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('ASSET_TYPE_SUPERSEDED');
    expect((await t.poster.post('/v1/transactions', transfer(source, wallet, '1.00'))).status).toBe(
      201,
    );
    await t.admin.patch(`/v1/asset-types/${usd}`, { status: 'active' });
    expect(
      (await t.admin.post('/v1/accounts', { asset_type_id: usd, normal_side: 'debit' })).status,
    ).toBe(201);
  });

  it('when an account is created, then floor omitted means 0.00, null means unbounded, and async has none', async () => {
    const usd = await h.assetType(t);
    const created = await t.admin.post('/v1/accounts', {
      asset_type_id: usd,
      name: 'cash',
      normal_side: 'debit',
      metadata: { a: 1 },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'cash', normal_side: 'debit' });
    const record = await t.reader.get(`/v1/accounts/${created.body.account_id}`);
    expect(record.body).toEqual({
      account_id: created.body.account_id,
      asset_type_id: usd,
      name: 'cash',
      normal_side: 'debit',
      status: 'active',
      balance_tracking: 'sync',
      balance_floor: '0.00',
      balance_floor_minor: '0',
      scale: 2,
      metadata: { a: 1 },
      created_at: expect.stringMatching(/Z$/),
    });
    const unbounded = await h.account(t, usd, { balance_floor: null });
    expect((await t.reader.get(`/v1/accounts/${unbounded}`)).body).toMatchObject({
      balance_floor: null,
      balance_floor_minor: null,
    });
    const negative = await h.account(t, usd, { balance_floor: '-50.5' });
    expect((await t.reader.get(`/v1/accounts/${negative}`)).body).toMatchObject({
      balance_floor: '-50.50',
      balance_floor_minor: '-5050',
    });
    const asyncAccount = await h.account(t, usd, { balance_tracking: 'async' });
    expect((await t.reader.get(`/v1/accounts/${asyncAccount}`)).body).toMatchObject({
      balance_tracking: 'async',
      balance_floor: null,
    });
    const asyncWithFloor = await t.admin.post('/v1/accounts', {
      asset_type_id: usd,
      normal_side: 'debit',
      balance_tracking: 'async',
      balance_floor: '0',
    });
    expect(asyncWithFloor.body.error.code).toBe('INVALID_FLOOR');
    const badFloor = await t.admin.post('/v1/accounts', {
      asset_type_id: usd,
      normal_side: 'debit',
      balance_floor: '1.001',
    });
    expect(badFloor.body.error.code).toBe('INVALID_FLOOR');
  });

  it('when name is 255 chars it passes and 256 fails (INVALID_ACCOUNT); metadata 16 KiB canonical passes and one byte more fails (INVALID_METADATA)', async () => {
    const usd = await h.assetType(t);
    expect(
      (
        await t.admin.post('/v1/accounts', {
          asset_type_id: usd,
          normal_side: 'debit',
          name: 'n'.repeat(255),
        })
      ).status,
    ).toBe(201);
    const long = await t.admin.post('/v1/accounts', {
      asset_type_id: usd,
      normal_side: 'debit',
      name: 'n'.repeat(256),
    });
    expect(long.body.error.code).toBe('INVALID_ACCOUNT');
    // {"k":"…"} is 8 bytes of framing.
    const atLimit = { k: 'x'.repeat(16 * 1024 - 8) };
    expect(
      (
        await t.admin.post('/v1/accounts', {
          asset_type_id: usd,
          normal_side: 'debit',
          metadata: atLimit,
        })
      ).status,
    ).toBe(201);
    const pastLimit = { k: 'x'.repeat(16 * 1024 - 7) };
    const refused = await t.admin.post('/v1/accounts', {
      asset_type_id: usd,
      normal_side: 'debit',
      metadata: pastLimit,
    });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('INVALID_METADATA');
    const unknownAsset = await t.admin.post('/v1/accounts', {
      asset_type_id: '01a1ffb7-0000-7000-8000-000000000000',
      normal_side: 'debit',
    });
    expect(unknownAsset.body.error.code).toBe('REFERENCE_NOT_FOUND');
  });

  it('when accounts are listed, then newest first with keyset next_cursor; limit 1000 passes, 1001 and 0 fail', async () => {
    const other = await h.tenant();
    const usd = await h.assetType(other);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await h.account(other, usd));
    const first = await other.reader.get('/v1/accounts?limit=2');
    expect(first.body.accounts.map((a: { account_id: string }) => a.account_id)).toEqual([
      ids[4],
      ids[3],
    ]);
    expect(first.body.next_cursor).toBe(ids[3]);
    const second = await other.reader.get(`/v1/accounts?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.accounts.map((a: { account_id: string }) => a.account_id)).toEqual([
      ids[2],
      ids[1],
    ]);
    const last = await other.reader.get(`/v1/accounts?limit=2&cursor=${second.body.next_cursor}`);
    expect(last.body).toMatchObject({ accounts: [{ account_id: ids[0] }], next_cursor: null });
    expect((await other.reader.get('/v1/accounts?limit=1000')).body.accounts).toHaveLength(5);
    for (const limit of ['1001', '0', 'x']) {
      const reply = await other.reader.get(`/v1/accounts?limit=${limit}`);
      expect(reply.status).toBe(422);
      expect(reply.body.error.code).toBe('INVALID_REQUEST');
    }
  });

  it("when another tenant's account id is used, then 404 ACCOUNT_NOT_FOUND, never 403", async () => {
    const other = await h.tenant();
    const theirs = await h.account(other, await h.assetType(other));
    for (const path of [
      `/v1/accounts/${theirs}`,
      `/v1/accounts/${theirs}/balance`,
      `/v1/accounts/${theirs}/entries`,
    ]) {
      const reply = await t.reader.get(path);
      expect(reply.status).toBe(404);
      expect(reply.body.error.code).toBe('ACCOUNT_NOT_FOUND');
    }
    expect((await t.admin.patch(`/v1/accounts/${theirs}`, { name: 'mine' })).status).toBe(404);
  });

  it('when an account is frozen, then postings get 409 ACCOUNT_NOT_ACTIVE with Retry-After; closing needs zero balance; closed is final', async () => {
    const usd = await h.assetType(t);
    const source = await h.account(t, usd, { normal_side: 'credit', balance_floor: null });
    const wallet = await h.account(t, usd);
    await t.poster.post('/v1/transactions', transfer(source, wallet, '5.00'));
    expect((await t.admin.patch(`/v1/accounts/${wallet}`, { status: 'frozen' })).body.status).toBe(
      'frozen',
    );
    const frozen = await t.poster.post('/v1/transactions', transfer(source, wallet, '1.00'));
    expect(frozen.status).toBe(409);
    expect(frozen.body.error.code).toBe('ACCOUNT_NOT_ACTIVE');
    expect(frozen.headers.get('retry-after')).not.toBeNull();
    await t.admin.patch(`/v1/accounts/${wallet}`, { status: 'active' });

    const notEmpty = await t.admin.patch(`/v1/accounts/${wallet}`, { status: 'closed' });
    expect(notEmpty.status).toBe(409);
    expect(notEmpty.body.error.code).toBe('CLOSE_REQUIRES_ZERO_BALANCE');
    await t.poster.post('/v1/transactions', transfer(wallet, source, '5.00'));
    expect((await t.admin.patch(`/v1/accounts/${wallet}`, { status: 'closed' })).body.status).toBe(
      'closed',
    );
    const closed = await t.poster.post('/v1/transactions', transfer(source, wallet, '1.00'));
    expect(closed.body.error.code).toBe('ACCOUNT_NOT_ACTIVE');
    expect(closed.headers.get('retry-after')).toBeNull();
    expect((await t.admin.patch(`/v1/accounts/${wallet}`, { status: 'active' })).status).toBe(409);
  });

  it('when a floor is raised above the available balance, then it is refused; up to available it passes', async () => {
    const usd = await h.assetType(t);
    const source = await h.account(t, usd, { normal_side: 'credit', balance_floor: null });
    const wallet = await h.account(t, usd);
    await t.poster.post('/v1/transactions', transfer(source, wallet, '10.00'));
    const refused = await t.admin.patch(`/v1/accounts/${wallet}`, { balance_floor: '10.01' });
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('INVALID_FLOOR');
    expect(
      (await t.admin.patch(`/v1/accounts/${wallet}`, { balance_floor: '10.00' })).body
        .balance_floor,
    ).toBe('10.00');
    expect(
      (await t.admin.patch(`/v1/accounts/${wallet}`, { balance_floor: null })).body.balance_floor,
    ).toBeNull();
  });

  it('when anyone tries to change the journal in the database, then the trigger refuses with APPEND_ONLY_VIOLATION', async () => {
    const usd = await h.assetType(t);
    const source = await h.account(t, usd, { normal_side: 'credit', balance_floor: null });
    const wallet = await h.account(t, usd);
    await t.poster.post('/v1/transactions', transfer(source, wallet, '1.00'));
    for (const statement of [
      sql.unsafe`UPDATE ledger.entries SET amount_minor = 1 WHERE account_id = ${wallet}`,
      sql.unsafe`DELETE FROM ledger.entries WHERE account_id = ${wallet}`,
      sql.unsafe`DELETE FROM ledger.committed_legs WHERE account_id = ${wallet}`,
    ]) {
      await expect(
        withTenant(h.pool, t.tenantId, (tx) => tx.query(statement)),
      ).rejects.toMatchObject({ code: 'APPEND_ONLY_VIOLATION' });
      expect(LEDGER_ERRORS.APPEND_ONLY_VIOLATION.status).toBe(409);
    }
  });
});
