/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-assignment -- JSON replies in tests */
import net from 'node:net';
import type { Context } from 'koa';
import { sql } from '../../../db/pool';
import { withSystem, withTenant } from '../../../db/ledger/context';
import { requestHashOf } from '../../../api/ledger/idempotency';
import { POSTING_ENDPOINT } from '../../../services/ledger/transactions';
import { call, client, LedgerHarness, newKey, postingCounts, type TenantClients } from './support';

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

  /**
   * A POST written byte for byte on a socket, so that the header lines are exactly `lines`
   * (fetch and node:http may drop or normalise an empty header value).
   */
  const rawPost = (path: string, lines: string[], body: string) =>
    new Promise<{ status: number; headers: string; body: unknown }>((resolve, reject) => {
      const { hostname, port } = new URL(h.url);
      // Written, not ended: a half-closed socket makes the server drop the request's body.
      const socket = net.connect(Number(port), hostname, () =>
        socket.write(
          [
            `POST ${path} HTTP/1.1`,
            `Host: ${hostname}:${port}`,
            'Connection: close',
            'Content-Type: application/json',
            `Content-Length: ${Buffer.byteLength(body)}`,
            ...lines,
            '',
            body,
          ].join('\r\n'),
        ),
      );
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const split = text.indexOf('\r\n\r\n');
        const head = text.slice(0, split);
        try {
          resolve({
            status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]),
            headers: head,
            body: JSON.parse(text.slice(split + 4)) as unknown,
          });
        } catch (error) {
          reject(new Error(`unreadable reply ${JSON.stringify(text)}: ${String(error)}`));
        }
      });
    });

  it('when the Idempotency-Key is 1 char, then the request is accepted and the key is remembered; an explicitly empty header is 400 MISSING_IDEMPOTENCY_KEY as a missing one, and writes nothing', async () => {
    const other = await h.tenant(); // a tenant of its own: no 1-char key of this run exists in it
    const otherUsd = await h.assetType(other);
    const otherCash = await h.account(other, otherUsd, { balance_floor: null });
    const a = await h.account(other, otherUsd, { normal_side: 'credit' });
    const body = {
      entries: [
        { account_id: otherCash, direction: 'debit', amount: '1.00' },
        { account_id: a, direction: 'credit', amount: '1.00' },
      ],
    };
    const countOn = async (accountId: string) =>
      withTenant(h.pool, other.tenantId, (tx) =>
        tx.oneFirst(
          sql.unsafe`SELECT count(DISTINCT transaction_id) FROM ledger.entries WHERE account_id = ${accountId}`,
        ),
      );
    const one = await other.poster.post('/v1/transactions', body, 'k');
    expect(one.status).toBe(201);
    const again = await other.poster.post('/v1/transactions', body, 'k');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(one.body);
    expect(await countOn(a)).toBe('1');
    // On a route other than postings too (the general claim of every mutating route).
    const asset = await other.admin.post(
      '/v1/asset-types',
      { code: `ONE${Date.now()}`, kind: 'fiat', scale: 0 },
      'x',
    );
    expect(asset.status).toBe(201);

    // The poster's key is remembered now (one-statement path first); the reader's is not used.
    const raw = JSON.stringify(body);
    const auth = `Authorization: Bearer ${other.poster.token}`;
    const missing = await rawPost('/v1/transactions', [auth], raw);
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({
      error: { code: 'MISSING_IDEMPOTENCY_KEY', message: expect.any(String) },
    });
    for (const empty of ['Idempotency-Key: ', 'Idempotency-Key:', 'Idempotency-Key:    ']) {
      const reply = await rawPost('/v1/transactions', [auth, empty], raw);
      expect([reply.status, reply.body]).toEqual([400, missing.body]);
    }
    // A fresh key (general path first) gets the same answer for an empty header.
    const fresh = await h.key(other.tenantId, 'ledger_poster');
    const reply = await rawPost(
      '/v1/transactions',
      [`Authorization: Bearer ${fresh}`, 'Idempotency-Key: '],
      raw,
    );
    expect([reply.status, reply.body]).toEqual([400, missing.body]);
    const adminReply = await rawPost(
      '/v1/asset-types',
      [`Authorization: Bearer ${other.admin.token}`, 'Idempotency-Key: '],
      JSON.stringify({ code: `EMPTY${Date.now()}`, kind: 'fiat', scale: 0 }),
    );
    expect([adminReply.status, adminReply.body]).toEqual([400, missing.body]);
    expect(await countOn(a)).toBe('1');
    const empties = await withSystem(h.pool, (tx) =>
      tx.oneFirst(
        sql.unsafe`SELECT count(*) FROM ledger.idempotency_keys WHERE tenant_id = ${other.tenantId} AND key = ''`,
      ),
    );
    expect(Number(empties)).toBe(0);
  });

  describe('when another request holds the Idempotency-Key (an in-flight row), then 409 IDEMPOTENCY_IN_FLIGHT with Retry-After and nothing written', () => {
    const counts = () => postingCounts(h.url);
    const rowOf = (key: string) =>
      withSystem(h.pool, (tx) =>
        tx.maybeOne(sql.unsafe`
          SELECT state, encode(request_sha256, 'hex') AS sha, locked_until, response_status, response_body
          FROM ledger.idempotency_keys
          WHERE tenant_id = ${t.tenantId} AND endpoint = ${POSTING_ENDPOINT} AND key = ${key}`),
      );
    /** Another request's claim of `key` for exactly this request: in flight for 10 more minutes. */
    const holdKey = async (key: string, body: unknown) => {
      const hash = requestHashOf({
        path: '/v1/transactions',
        request: { body },
      } as unknown as Context);
      await withSystem(h.pool, (tx) =>
        tx.query(sql.unsafe`
          INSERT INTO ledger.idempotency_keys (tenant_id, endpoint, key, request_sha256, state, locked_until)
          VALUES (${t.tenantId}, ${POSTING_ENDPOINT}, ${key}, ${sql.binary(hash)}, 'in_flight',
                  now() + interval '10 minutes')`),
      );
      return rowOf(key);
    };
    const expectInFlight = async (
      reply: Awaited<ReturnType<typeof call>>,
      key: string,
      held: unknown,
      accountId: string,
    ) => {
      expect(reply.status).toBe(409);
      expect(reply.body).toEqual({
        error: { code: 'IDEMPOTENCY_IN_FLIGHT', message: expect.any(String) },
      });
      expect(reply.headers.get('retry-after')).toBe('1');
      expect(reply.headers.get('idempotent-replayed')).toBeNull();
      expect(await transactionsOf(accountId)).toBe('0');
      const balance = await t.reader.get(`/v1/accounts/${accountId}/balance`);
      expect(balance.body.version).toBe('0');
      // The holder's claim is untouched: not released, not completed, not extended.
      expect(await rowOf(key)).toEqual(held);
    };

    it('on the general path (a key on its first request)', async () => {
      const poster = client(h.url, await h.key(t.tenantId, 'ledger_poster'));
      const a = await wallet();
      const key = newKey();
      const held = await holdKey(key, deposit(a, '4.00'));
      expect(held).toMatchObject({ state: 'in_flight', response_status: null });
      const before = await counts();
      const reply = await poster.post('/v1/transactions', deposit(a, '4.00'), key);
      await expectInFlight(reply, key, held, a);
      // Not through the one-statement path: the key had not authenticated before.
      expect(await counts()).toEqual(before);
      // A second try is still refused while the claim holds (nothing was taken over).
      await expectInFlight(
        await poster.post('/v1/transactions', deposit(a, '4.00'), key),
        key,
        held,
        a,
      );
    });

    it('on the one-statement path (a key remembered after a posting), which hands it back to the general path', async () => {
      const poster = client(h.url, await h.key(t.tenantId, 'ledger_poster'));
      expect((await poster.post('/v1/transactions', deposit(await wallet(), '1.00'))).status).toBe(
        201,
      );
      const a = await wallet();
      const key = newKey();
      const held = await holdKey(key, deposit(a, '4.00'));
      const before = await counts();
      const reply = await poster.post('/v1/transactions', deposit(a, '4.00'), key);
      await expectInFlight(reply, key, held, a);
      // Taken by the one-statement path, handed back with nothing written, answered by the general.
      expect(await counts()).toEqual({
        ...before,
        oneStatementHandedBack: before.oneStatementHandedBack + 1,
      });
    });
  });
});
