/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-explicit-any -- JSON replies in tests */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { v7 as uuidv7 } from 'uuid';
import { runCommand } from '../../../cli/ledger';
import { withSystem } from '../../../db/ledger/context';
import { insertTenant } from '../../../db/ledger/tenants';
import { sql } from '../../../db/pool';
import { client, LedgerHarness, newKey, transfer, type TenantClients } from './support';

jest.setTimeout(60_000);
const run = promisify(execFile);
const CLI = path.join(__dirname, '../../../scripts/ledger-admin');

describe('ledger posting freezes (409 POSTING_FROZEN, set by the operator)', () => {
  const h = new LedgerHarness();
  let t: TenantClients;
  let usd: string;
  let cash: string;
  beforeAll(async () => ({ t, usd, cash } = await h.startWithCash()));
  afterAll(() => h.stop());

  // The tenant is the command's positional argument (`posting freeze <tenant_id>`).
  const admin = (command: string, options: Record<string, string | boolean>, args: string[] = []) =>
    runCommand(h.pool, command, options, args);
  const freeze = (tenantId: string, extra: Record<string, string> = {}) =>
    admin('posting freeze', extra, [tenantId]);
  const unfreeze = (tenantId: string, extra: Record<string, string> = {}) =>
    admin('posting unfreeze', extra, [tenantId]);
  const written = async (externalId: string) =>
    withSystem(h.pool, (tx) =>
      tx.oneFirst(
        sql.unsafe`SELECT count(*)::int FROM ledger.transactions WHERE external_id = ${externalId}`,
      ),
    );
  const expectFrozen = (
    reply: { status: number; body: any; headers: Headers },
    retryAfter: string,
    details: unknown,
  ) => {
    expect(reply.status).toBe(409);
    expect(reply.body.error.code).toBe('POSTING_FROZEN');
    expect(reply.body.error.details).toEqual(details);
    expect(reply.headers.get('retry-after')).toBe(retryAfter);
  };

  it('when the operator freezes a tenant, then its postings on both paths get 409 POSTING_FROZEN with the Retry-After set, nothing is written, and the same Idempotency-Key posts once it is lifted', async () => {
    const shop = await h.account(t, usd, { name: 'shop' });
    // The poster key posts once: the API remembers it, and its next postings take the one-statement path.
    expect((await t.poster.post('/v1/transactions', transfer(cash, shop, '1.00'))).status).toBe(
      201,
    );
    const freshPoster = client(h.url, await h.key(t.tenantId, 'ledger_poster'));
    const counters = async () => {
      const { posted, pending, version } = (await t.reader.get(`/v1/accounts/${shop}/balance`))
        .body;
      return { posted, pending, version };
    };
    const before = await counters();

    const frozen = await freeze(t.tenantId, { 'retry-after': '30', reason: 'reconciliation' });
    expect(frozen.json).toMatchObject({
      tenant_id: t.tenantId,
      asset_type_id: null,
      retry_after_seconds: 30,
      reason: 'reconciliation',
    });

    const key = newKey();
    const body = transfer(cash, shop, '2.00', { external_id: `frozen-${key}` });
    expectFrozen(await t.poster.post('/v1/transactions', body, key), '30', { scope: 'tenant' });
    const general = newKey();
    expectFrozen(await freshPoster.post('/v1/transactions', body, general), '30', {
      scope: 'tenant',
    });
    expect(await written(`frozen-${key}`)).toBe(0);
    // Reads go on, and the balance did not move.
    expect(await counters()).toEqual(before);

    // Freezing again changes the Retry-After of the same freeze (one per scope).
    await freeze(t.tenantId, { 'retry-after': '45' });
    expectFrozen(await t.poster.post('/v1/transactions', body, key), '45', { scope: 'tenant' });

    expect((await unfreeze(t.tenantId)).json).toMatchObject({ unfrozen: true });
    // The refusal was transient: the key was given back, so its retry posts.
    const posted = await t.poster.post('/v1/transactions', body, key);
    expect(posted.status).toBe(201);
    expect(await written(`frozen-${key}`)).toBe(1);
    expect((await freshPoster.post('/v1/transactions', body, general)).body.error.code).toBe(
      'DUPLICATE_TRANSACTION',
    );
  });

  it('when a tenant is frozen, then committing a hold is refused and nothing settles, while a void and new reads go on; after the lift the commit succeeds', async () => {
    const shop = await h.account(t, usd, { name: 'hold-shop' });
    const hold = (amount: string) =>
      t.poster.post('/v1/transactions', {
        pending: true,
        expires_at: new Date(Date.now() + 600_000).toISOString(),
        entries: [
          { account_id: shop, direction: 'debit', amount },
          { account_id: cash, direction: 'credit', amount },
        ],
      });
    const toCommit = (await hold('3.00')).body.transaction_id as string;
    const toVoid = (await hold('4.00')).body.transaction_id as string;

    await freeze(t.tenantId, { 'retry-after': '5' });
    try {
      expectFrozen(await hold('5.00'), '5', { scope: 'tenant' });
      expectFrozen(await t.poster.post(`/v1/transactions/${toCommit}/commit`), '5', {
        scope: 'tenant',
      });
      expect((await t.reader.get(`/v1/transactions/${toCommit}`)).body.state).toBe('pending');
      const voided = await t.poster.post(`/v1/transactions/${toVoid}/void`);
      expect(voided.status).toBe(200);
      expect(voided.body.state).toBe('voided');
    } finally {
      await unfreeze(t.tenantId);
    }
    const committed = await t.poster.post(`/v1/transactions/${toCommit}/commit`);
    expect(committed.status).toBe(200);
    expect(committed.body.state).toBe('committed');
  });

  it('when one asset type is frozen, then only postings in it are refused (also inside one batch of concurrent postings), with the asset type named', async () => {
    const eur = await h.assetType(t);
    const eurCash = await h.account(t, eur, { normal_side: 'debit', balance_floor: null });
    const eurShop = await h.account(t, eur);
    const usdShop = await h.account(t, usd);
    await freeze(t.tenantId, { 'asset-type': eur });
    try {
      const replies = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          t.poster.post(
            '/v1/transactions',
            i % 2 === 0 ? transfer(eurCash, eurShop, '1.00') : transfer(cash, usdShop, '1.00'),
          ),
        ),
      );
      replies.forEach((reply, i) => {
        if (i % 2 === 0) expectFrozen(reply, '60', { scope: 'asset_type', asset_type_id: eur });
        else expect(reply.status).toBe(201);
      });
      expect((await t.reader.get(`/v1/accounts/${eurShop}/balance`)).body.posted).toMatchObject({
        debits: '0.00',
      });
      expect((await t.reader.get(`/v1/accounts/${usdShop}/balance`)).body.posted).toMatchObject({
        debits: '6.00',
      });
    } finally {
      expect((await unfreeze(t.tenantId, { 'asset-type': eur })).json).toMatchObject({
        unfrozen: true,
      });
    }
    expect(
      (await t.poster.post('/v1/transactions', transfer(eurCash, eurShop, '1.00'))).status,
    ).toBe(201);
  });

  it("when a root tenant is frozen, then its sub-tenants' postings are refused too; a sub-tenant's own freeze leaves its root alone", async () => {
    const childId = uuidv7();
    await withSystem(h.pool, (tx) =>
      insertTenant(tx, {
        tenantId: childId,
        parentId: t.tenantId,
        name: 'client',
        kind: 'production',
        contactEmail: null,
      }),
    );
    const child: TenantClients = {
      tenantId: childId,
      admin: client(h.url, await h.key(childId, 'ledger_admin')),
      poster: client(h.url, await h.key(childId, 'ledger_poster')),
      reader: client(h.url, await h.key(childId, 'ledger_reader')),
      partner: t.partner,
    };
    const childUsd = await h.assetType(child);
    const childCash = await h.account(child, childUsd, { balance_floor: null });
    const childShop = await h.account(child, childUsd);
    const rootShop = await h.account(t, usd);

    await freeze(t.tenantId);
    try {
      expectFrozen(
        await child.poster.post('/v1/transactions', transfer(childCash, childShop, '1.00')),
        '60',
        { scope: 'tenant' },
      );
    } finally {
      await unfreeze(t.tenantId);
    }
    await freeze(childId);
    try {
      expect(
        (await t.poster.post('/v1/transactions', transfer(cash, rootShop, '1.00'))).status,
      ).toBe(201);
      expect(
        (await child.poster.post('/v1/transactions', transfer(childCash, childShop, '1.00')))
          .status,
      ).toBe(409);
    } finally {
      await unfreeze(childId);
    }
  });

  it('when the operator uses the CLI, then freeze, freezes and unfreeze print JSON, and --retry-after is held to 1..86400 s and --reason to 1..1024 chars', async () => {
    const other = await h.tenant('cli-frozen');
    const json = async (args: string[]) =>
      JSON.parse((await run(CLI, [...args, '--json'])).stdout) as Record<string, any>;
    expect(
      await json([
        'posting',
        'freeze',
        other.tenantId,
        '--retry-after',
        '86400',
        '--reason',
        'r'.repeat(1024),
      ]),
    ).toMatchObject({ tenant_id: other.tenantId, retry_after_seconds: 86400 });
    expect((await json(['posting', 'freezes', '--tenant', other.tenantId])).freezes).toHaveLength(
      1,
    );
    expect(await json(['posting', 'unfreeze', other.tenantId])).toMatchObject({
      unfrozen: true,
    });
    expect(await json(['posting', 'unfreeze', other.tenantId])).toEqual({
      unfrozen: false,
      freeze: null,
    });

    // The lower edges: 1 s and a 1-char reason are taken; 0 s and an empty reason are not.
    expect((await freeze(other.tenantId, { 'retry-after': '1', reason: 'r' })).json).toMatchObject({
      retry_after_seconds: 1,
      reason: 'r',
    });
    await unfreeze(other.tenantId);
    for (const bad of [
      ['--retry-after', '0'],
      ['--reason', ''],
      ['--retry-after', '86401'],
      ['--reason', 'r'.repeat(1025)],
      ['--asset-type', uuidv7()],
    ]) {
      await expect(freeze(other.tenantId, { [bad[0]!.slice(2)]: bad[1]! })).rejects.toThrow(
        /retry-after|reason|not found/,
      );
    }
    await expect(freeze(uuidv7())).rejects.toThrow(/not found/);
    expect((await admin('posting freezes', { tenant: other.tenantId })).json).toEqual({
      freezes: [],
    });
  });
});
