/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return -- JSON replies in tests */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { sql } from '../../../db/pool';
import { withSystem } from '../../../db/ledger/context';
import { runCommand } from '../../../cli/ledger';
import { call, client, LedgerHarness, type TenantClients } from './support';

const run = promisify(execFile);
jest.setTimeout(60_000);

describe('ledger auth, tenants and the operator CLI', () => {
  const h = new LedgerHarness();
  let t: TenantClients;
  beforeAll(async () => {
    await h.start();
    t = await h.tenant();
  });
  afterAll(() => h.stop());

  it('when /healthz is asked (GET or HEAD), then it answers without credentials and reports the credential store', async () => {
    const reply = await call(h.url, 'GET', '/healthz', null);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({
      status: 'ok',
      auth_client_credential: 'ok',
      version: expect.any(String),
    });
    const head = await fetch(`${h.url}/healthz`, { method: 'HEAD' });
    expect(head.status).toBe(200);
  });

  it('when the credential is missing, malformed, unknown or revoked, then 401 UNAUTHENTICATED', async () => {
    for (const token of [null, 'nonsense', `lk_${'0'.repeat(32)}_${'a'.repeat(43)}`]) {
      const reply = await call(h.url, 'GET', '/v1/asset-types', token);
      expect(reply.status).toBe(401);
      expect(reply.body).toEqual({
        error: { code: 'UNAUTHENTICATED', message: expect.any(String) },
      });
    }
    const secret = await h.key(t.tenantId, 'ledger_reader');
    const keyId = /^lk_([0-9a-f]{32})_/.exec(secret)![1]!;
    await withSystem(h.pool, (tx) =>
      tx.query(
        sql.unsafe`UPDATE ledger.api_keys SET revoked_at = now() WHERE replace(key_id::text, '-', '') = ${keyId}`,
      ),
    );
    expect((await client(h.url, secret).get('/v1/asset-types')).body.error.code).toBe(
      'UNAUTHENTICATED',
    );
    // A right key id with a wrong secret is unknown too.
    const forged = t.reader.token.slice(0, -3) + (t.reader.token.endsWith('AAA') ? 'BBB' : 'AAA');
    expect((await client(h.url, forged).get('/v1/asset-types')).status).toBe(401);
  });

  it('when the key has expired, then 401 CREDENTIAL_EXPIRED', async () => {
    const secret = await h.key(t.tenantId, 'ledger_reader', 1);
    expect((await client(h.url, secret).get('/v1/asset-types')).status).toBe(200);
    await withSystem(h.pool, (tx) =>
      tx.query(
        sql.unsafe`UPDATE ledger.api_keys SET expires_at = now() - interval '1 second' WHERE replace(key_id::text, '-', '') = ${secret.slice(3, 35)}`,
      ),
    );
    const reply = await client(h.url, secret).get('/v1/asset-types');
    expect(reply.status).toBe(401);
    expect(reply.body.error.code).toBe('CREDENTIAL_EXPIRED');
  });

  it('when the operator suspends a tenant, then its keys get 403 TENANT_SUSPENDED, and access returns on activation', async () => {
    const other = await h.tenant();
    const cli = path.join(__dirname, '../../../scripts/ledger-admin');
    await run(cli, ['tenant', 'suspend', other.tenantId, '--json']);
    const refused = await other.reader.get('/v1/asset-types');
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('TENANT_SUSPENDED');
    await run(cli, ['tenant', 'activate', other.tenantId]);
    expect((await other.reader.get('/v1/asset-types')).status).toBe(200);
  });

  it('when the operator CLI creates a tenant and a key with --json, then the secret works once printed and only its hash is stored', async () => {
    const cli = path.join(__dirname, '../../../scripts/ledger-admin');
    const tenant = JSON.parse(
      (await run(cli, ['tenant', 'create', '--name', 'cli-made', '--json'])).stdout,
    ) as { tenant_id: string; status: string };
    expect(tenant.status).toBe('active');
    const key = JSON.parse(
      (
        await run(cli, [
          'key',
          'create',
          '--tenant',
          tenant.tenant_id,
          '--role',
          'ledger_reader',
          '--ttl-days',
          '2',
          '--label',
          'ops',
          '--json',
        ])
      ).stdout,
    ) as { key_id: string; secret: string; expires_at: string; label: string };
    expect(key.secret).toMatch(/^lk_[0-9a-f]{32}_[A-Za-z0-9_-]{43}$/);
    expect(key.label).toBe('ops');
    expect(Date.parse(key.expires_at) - Date.now()).toBeGreaterThan(47 * 3600 * 1000);
    expect((await client(h.url, key.secret).get('/v1/asset-types')).body).toEqual({
      asset_types: [],
    });
    const stored = await withSystem(h.pool, (tx) =>
      tx.one(
        sql.unsafe`SELECT encode(secret_sha256, 'hex') AS hash FROM ledger.api_keys WHERE key_id = ${key.key_id}`,
      ),
    );
    expect(stored.hash).toHaveLength(64);
    expect(JSON.stringify(stored)).not.toContain(key.secret.slice(36));

    await run(cli, ['key', 'revoke', '--key', key.key_id]);
    expect((await client(h.url, key.secret).get('/v1/asset-types')).status).toBe(401);

    await expect(
      run(cli, ['key', 'create', '--tenant', tenant.tenant_id, '--role', 'ledger_god']),
    ).rejects.toMatchObject({ code: 2 });
  });

  it('when the operator CLI creates a key, then --ttl-days is held to 1..3650 and --label to 1..255 chars', async () => {
    const create = (extra: Record<string, string>) =>
      runCommand(h.pool, 'key create', { tenant: t.tenantId, role: 'ledger_reader', ...extra });
    for (const taken of [
      { 'ttl-days': '1', label: 'l' },
      { 'ttl-days': '3650', label: 'l'.repeat(255) },
    ])
      expect((await create(taken)).json).toMatchObject({ label: taken.label });
    for (const [option, value] of [
      ['ttl-days', '0'],
      ['ttl-days', '3651'],
      ['ttl-days', '1.5'],
      ['label', ''],
      ['label', 'l'.repeat(256)],
    ] as const)
      await expect(create({ [option]: value })).rejects.toThrow(`--${option} must be`);
  });

  it('when a path is unknown or a method not allowed, then the ledger envelope answers 404 NOT_FOUND / 405 with Allow', async () => {
    const missing = await t.reader.get('/v1/nothing-here');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
    const wrong = await call(h.url, 'PUT', '/v1/accounts', t.admin.token, {});
    expect(wrong.status).toBe(405);
    expect(wrong.body.error.code).toBe('METHOD_NOT_ALLOWED');
    expect(wrong.headers.get('allow')).toContain('POST');
  });

  it('when row-level security is on, then a query without tenant context sees no rows of any tenant', async () => {
    await h.assetType(t);
    const visible = await h.pool.transaction((tx) =>
      tx.oneFirst(sql.unsafe`SELECT count(*) FROM ledger.asset_types`),
    );
    expect(visible).toBe('0');
    const own = await h.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`SELECT set_config('ledger.tenant_id', ${t.tenantId}, true)`);
      return tx.oneFirst(sql.unsafe`SELECT count(*) FROM ledger.asset_types`);
    });
    expect(own).toBe('1');
  });
});
