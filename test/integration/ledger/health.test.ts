/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-argument -- JSON documents and replies in tests */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { loadConfig } from '../../../platform/config';
import { createDatabasePool, sql, sqlState } from '../../../db/pool';
import { eventually, startTestService } from '../../support/services';
import { REPO_ROOT } from '../../support/stack-env';
import { call, client, LedgerHarness, transfer, type Reply, type TenantClients } from './support';

jest.setTimeout(60_000);

/** The release a user names: package.json's, which every probe reports. */
const { version } = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as {
  version: string;
};

/**
 * /healthz reads what the background monitor last saw of the database, which is also the key
 * store, reached with the service's own database credential: up (ok), refusing that login
 * (rejected: every keyed request gets 503 AUTHZ_CREDENTIAL_REJECTED), unreachable (unknown).
 */
describe("ledger /healthz and the service's own database credential", () => {
  const h = new LedgerHarness();
  let t: TenantClients;
  let cash: string;
  let wallet: string;
  let doc: any;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  beforeAll(async () => {
    ({ t, cash } = await h.startWithCash());
    wallet = await h.account(t, (await t.reader.get(`/v1/accounts/${cash}`)).body.asset_type_id);
    doc = (await call(h.url, 'GET', '/openapi.json', null)).body;
    ajv.addSchema(doc, 'ledger.json');
  });
  afterAll(() => h.stop());

  /** The reply is what /openapi.json documents for that operation and status. */
  function documented(method: string, template: string, reply: Reply): void {
    const response = doc.paths[template][method.toLowerCase()].responses[String(reply.status)];
    expect([method, template, reply.status, response ? 'documented' : 'undocumented']).toEqual([
      method,
      template,
      reply.status,
      'documented',
    ]);
    const validate = ajv.getSchema(
      `ledger.json${response.content['application/json'].schema.$ref as string}`,
    )!;
    expect(validate(reply.body) ? [] : validate.errors).toEqual([]);
  }

  const upstream = new URL(loadConfig().databaseUrl);

  it('when /ping is asked (GET or HEAD) without a key, then 200 with the version, as documented; /healthz reports the same version', async () => {
    const reply = await call(h.url, 'GET', '/ping', null);
    expect([reply.status, reply.body]).toEqual([200, { status: 'ok', version }]);
    documented('GET', '/ping', reply);
    expect((await fetch(`${h.url}/ping`, { method: 'HEAD' })).status).toBe(200);
    const healthz = await call(h.url, 'GET', '/healthz', null);
    expect([healthz.status, healthz.body]).toEqual([
      200,
      { status: 'ok', auth_client_credential: 'ok', version },
    ]);
    const wrongMethod = await call(h.url, 'POST', '/ping', null);
    expect([wrongMethod.status, wrongMethod.body.error.code]).toEqual([405, 'METHOD_NOT_ALLOWED']);
  });

  it("when the database refuses the service's login while it serves, then /healthz is 503 rejected and keyed requests (reads, writes, one-statement postings) get 503 AUTHZ_CREDENTIAL_REJECTED; once accepted again, 200 ok without a restart", async () => {
    // A login role of its own (a member of the stack's role, so it sees what the service sees)
    // whose password can change without touching anyone else's connections.
    const role = `ledger_login_${process.pid}_${Date.now().toString(36)}`;
    const roleId = sql.identifier([role]);
    await h.pool.query(
      sql.unsafe`CREATE ROLE ${roleId} LOGIN PASSWORD 'first' IN ROLE ${sql.identifier([upstream.username])}`,
    );
    const url = new URL(upstream.toString());
    url.username = role;
    url.password = 'first';
    const api = new LedgerHarness();
    // A session of the role itself: only it may end the role's other sessions.
    const own = await createDatabasePool(loadConfig({ ...process.env, DATABASE_URL: url.href }), {
      applicationName: 'ledger-login-test',
      maximumPoolSize: 1,
    });
    try {
      await api.start({ DATABASE_URL: url.href });
      const health = await call(api.url, 'GET', '/healthz', null);
      expect([health.status, health.body]).toEqual([
        200,
        { status: 'ok', auth_client_credential: 'ok', version },
      ]);
      const reader = client(api.url, t.reader.token);
      const poster = client(api.url, t.poster.token);
      expect((await reader.get('/v1/asset-types')).status).toBe(200);
      // The poster's key is now remembered in this process: its next posting goes in one statement.
      expect((await poster.post('/v1/transactions', transfer(cash, wallet, '1.00'))).status).toBe(
        201,
      );

      await own.oneFirst(sql.unsafe`SELECT 1`);
      await h.pool.query(sql.unsafe`ALTER ROLE ${roleId} PASSWORD 'rotated'`);
      await own.query(sql.unsafe`
        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE usename = ${role} AND pid <> pg_backend_pid()`);

      const rejected = await eventually(async () => {
        const reply = await call(api.url, 'GET', '/healthz', null);
        return reply.body?.auth_client_credential === 'rejected' ? reply : undefined;
      }, 10_000);
      expect(rejected.status).toBe(503);
      expect(rejected.body).toEqual({
        status: 'unhealthy',
        reason: expect.any(String),
        auth_client_credential: 'rejected',
        version,
      });
      documented('GET', '/healthz', rejected);

      const replies = {
        read: await reader.get('/v1/asset-types'),
        write: await client(api.url, t.admin.token).post('/v1/accounts', {
          asset_type_id: (await t.reader.get(`/v1/accounts/${cash}`)).body.asset_type_id,
          normal_side: 'debit',
        }),
        posting: await poster.post('/v1/transactions', transfer(cash, wallet, '1.00')),
      };
      for (const [what, reply] of Object.entries(replies)) {
        expect([
          what,
          reply.status,
          reply.body.error.code,
          reply.headers.get('retry-after'),
        ]).toEqual([what, 503, 'AUTHZ_CREDENTIAL_REJECTED', '1']);
      }
      documented('GET', '/v1/asset-types', replies.read);
      documented('POST', '/v1/transactions', replies.posting);

      await h.pool.query(sql.unsafe`ALTER ROLE ${roleId} PASSWORD 'first'`);
      const recovered = await eventually(async () => {
        const reply = await call(api.url, 'GET', '/healthz', null);
        return reply.status === 200 ? reply : undefined;
      }, 10_000);
      expect(recovered.body).toEqual({ status: 'ok', auth_client_credential: 'ok', version });
      expect((await reader.get('/v1/asset-types')).status).toBe(200);
    } finally {
      await api.stop().catch(() => undefined);
      await own.end();
      await h.pool.query(sql.unsafe`DROP ROLE IF EXISTS ${roleId}`);
    }
  });

  it('when the database becomes unreachable, then /healthz is 503 unhealthy with auth_client_credential unknown and keyed requests get 503 AUTHZ_UNAVAILABLE', async () => {
    const sockets = new Set<net.Socket>();
    const proxy = net.createServer((downstream) => {
      const up = net.connect(Number(upstream.port || 5432), upstream.hostname);
      for (const socket of [downstream, up]) {
        sockets.add(socket);
        socket.on('error', () => socket.destroy());
        socket.on('close', () => sockets.delete(socket));
      }
      downstream.pipe(up).pipe(downstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxied = new URL(upstream.toString());
    proxied.port = String((proxy.address() as net.AddressInfo).port);
    const cut = new LedgerHarness();
    try {
      await cut.start({ DATABASE_URL: proxied.toString() });
      expect((await call(cut.url, 'GET', '/healthz', null)).body.auth_client_credential).toBe('ok');
      proxy.close();
      for (const socket of sockets) socket.destroy();
      const health = await eventually(async () => {
        const reply = await call(cut.url, 'GET', '/healthz', null);
        return reply.status === 503 ? reply : undefined;
      }, 10_000);
      expect(health.body).toEqual({
        status: 'unhealthy',
        reason: 'database unreachable',
        auth_client_credential: 'unknown',
        version,
      });
      documented('GET', '/healthz', health);
      // Liveness asks no backend: the process is alive, a restart would not bring the database back.
      const alive = await call(cut.url, 'GET', '/ping', null);
      expect([alive.status, alive.body]).toEqual([200, { status: 'ok', version }]);
      const reply = await client(cut.url, t.reader.token).get('/v1/asset-types');
      expect([reply.status, reply.body.error.code, reply.headers.get('retry-after')]).toEqual([
        503,
        'AUTHZ_UNAVAILABLE',
        '1',
      ]);
    } finally {
      proxy.close();
      await cut.stop().catch(() => undefined);
    }
  });

  it("when the database refuses the service's login at start, then the API does not start and says why (SQLSTATE 28P01)", async () => {
    const wrong = new URL(upstream.toString());
    wrong.password = `not-${upstream.password}`;
    const started = await startTestService('ledger', { DATABASE_URL: wrong.href }).then(
      async (service) => {
        await service.close();
        return service;
      },
      (error: unknown) => error,
    );
    // The pool reads the database's type ids on its first connection, so it cannot be made.
    expect(sqlState(started)).toBe('28P01');
  });
});
