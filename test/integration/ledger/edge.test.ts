/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment -- JSON replies in tests */
import http from 'node:http';
import { loadConfig } from '../../../platform/config';
import { sql } from '../../../db/pool';
import { withTenant } from '../../../db/ledger/context';
import { call, client, LedgerHarness, type TenantClients } from './support';

jest.setTimeout(60_000);

const KIB = 1024;

/** A JSON body of exactly `bytes` bytes: {"description":"xxxx…"}. */
const bodyOfSize = (bytes: number) => `{"description":"${'x'.repeat(bytes - 18)}"}`;

describe('ledger edge and limits', () => {
  const h = new LedgerHarness();
  let t: TenantClients;
  beforeAll(async () => {
    await h.start();
    t = await h.tenant();
  });
  afterAll(() => h.stop());

  const post = (url: string, token: string, raw: string) =>
    call(url, 'POST', '/v1/transactions', token, raw);

  it('when one address sends more than 10/s past a burst of 20, then 429 RATE_LIMITED with Retry-After; /healthz and /ping are never limited', async () => {
    const edge = await new LedgerHarness().start({
      LEDGER_EDGE_RATE_PER_SECOND: '10',
      LEDGER_EDGE_BURST: '20',
    });
    try {
      // 50 at once: the bucket's refill while they are in flight (a loaded machine answers them
      // over a second or more) still leaves some past the burst.
      const sent = 50;
      const started = Date.now();
      const replies = await Promise.all(
        Array.from({ length: sent }, () =>
          call(edge.url, 'GET', '/v1/asset-types', t.reader.token),
        ),
      );
      const limited = replies.filter((r) => r.status === 429);
      const served = replies.filter((r) => r.status === 200);
      expect(served.length).toBeGreaterThanOrEqual(20);
      // The bucket refills at 10/s while the 30 requests are in flight.
      expect(served.length).toBeLessThanOrEqual(
        20 + Math.ceil(((Date.now() - started) / 1000) * 10),
      );
      expect(limited.length).toBe(sent - served.length);
      expect(limited[0]!.body).toEqual({
        error: { code: 'RATE_LIMITED', message: expect.any(String) },
      });
      expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // Each answer the edge judged states its bucket: 20 at once, refilled in 2 s (10/s).
      for (const reply of replies)
        expect(reply.headers.get('ratelimit-policy')).toBe('"address";q=20;w=2');
      const stateOf = (reply: (typeof replies)[number]) => {
        const [, r, t] = /^"address";r=(\d+);t=(\d+)$/.exec(reply.headers.get('ratelimit')!)!;
        return { r: Number(r), t: Number(t) };
      };
      for (const reply of limited) expect(stateOf(reply)).toEqual({ r: 0, t: 2 });
      for (const reply of served) {
        expect(stateOf(reply).r).toBeLessThanOrEqual(19);
        expect(stateOf(reply).t).toBeLessThanOrEqual(2);
      }
      const probes = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          call(edge.url, 'GET', i % 2 ? '/ping' : '/healthz', null),
        ),
      );
      expect(probes.every((r) => r.status === 200)).toBe(true);
    } finally {
      await edge.stop();
    }
  });

  it('when the ledger is behind a trusted proxy (TRUSTED_PROXIES), then the edge limits and /metrics judge the forwarded client; an untrusted peer cannot choose its address', async () => {
    const limits = { LEDGER_EDGE_RATE_PER_SECOND: '1', LEDGER_EDGE_BURST: '2' };
    const behindProxy = await new LedgerHarness().start({ ...limits, TRUSTED_PROXIES: 'loopback' });
    const direct = await new LedgerHarness().start({ ...limits, TRUSTED_PROXIES: '' });
    const from = (url: string, client: string, path = '/v1/asset-types') =>
      fetch(url + path, {
        headers: { authorization: `Bearer ${t.reader.token}`, 'x-forwarded-for': client },
      }).then((r) => r.status);
    try {
      // Each forwarded client has its own bucket of 2: the third of one is refused, another's first is not.
      const one = [];
      for (let i = 0; i < 3; i++) one.push(await from(behindProxy.url, '203.0.113.9'));
      expect(one).toEqual([200, 200, 429]);
      expect(await from(behindProxy.url, '203.0.113.10')).toBe(200);
      // Without trust the header is the caller's own word: every request is the socket's, one bucket.
      const all = [];
      for (const client of ['203.0.113.9', '203.0.113.10', '203.0.113.11'])
        all.push(await from(direct.url, client));
      expect(all).toEqual([200, 200, 429]);
      // /metrics (private networks only) goes by the forwarded client, never by the proxy's address.
      // (Fresh addresses: /metrics counts against the edge limit too.)
      expect(await from(behindProxy.url, '203.0.113.20', '/metrics')).toBe(403);
      expect(await from(behindProxy.url, '10.1.2.3', '/metrics')).toBe(200);
    } finally {
      await behindProxy.stop();
      await direct.stop();
    }
  });

  it('when an address has used its burst, then after 1 s about 10 more requests are served (10/s, not the burst again), and the rest are 429 RATE_LIMITED with Retry-After', async () => {
    // The spec's numbers are the configuration's defaults: this service runs on them.
    const defaults = { LEDGER_EDGE_RATE_PER_SECOND: undefined, LEDGER_EDGE_BURST: undefined };
    expect(loadConfig({ ...process.env, ...defaults }).ledger).toMatchObject({
      edgeRatePerSecond: 10,
      edgeBurst: 20,
    });
    const edge = await new LedgerHarness().start(defaults);
    // A source address of this test alone (all of 127.0.0.0/8 is loopback): a bucket that no other
    // test or process touches, full when the test starts.
    const address = `127.${1 + Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 256)}.${2 + Math.floor(Math.random() * 250)}`;
    const { hostname, port } = new URL(edge.url);
    const get = () =>
      new Promise<{ status: number; retryAfter: string | undefined; code: unknown }>(
        (resolve, reject) => {
          const request = http.request(
            {
              host: hostname,
              port,
              path: '/v1/asset-types',
              headers: { authorization: `Bearer ${t.reader.token}` },
              localAddress: address,
              agent: false,
            },
            (response) => {
              let text = '';
              response.setEncoding('utf8');
              response.on('data', (chunk: string) => (text += chunk));
              response.on('end', () => {
                const header = response.headers['retry-after'];
                resolve({
                  status: response.statusCode!,
                  retryAfter: Array.isArray(header) ? header[0] : header,
                  code: (JSON.parse(text) as { error?: { code?: unknown } }).error?.code,
                });
              });
            },
          );
          request.on('error', reject);
          request.end();
        },
      );
    const burst = (n: number) => Promise.all(Array.from({ length: n }, get));
    try {
      const first = await burst(30);
      expect(first.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(20);
      expect(first.filter((r) => r.status === 429).length).toBeGreaterThan(0);
      // Single requests until one is refused: at that refusal the bucket holds less than a token.
      let refusedSentAt = 0;
      let refusedAt = 0;
      for (let i = 0; i < 50 && refusedAt === 0; i++) {
        const sentAt = Date.now();
        if ((await get()).status === 429) [refusedSentAt, refusedAt] = [sentAt, Date.now()];
      }
      expect(refusedAt).toBeGreaterThan(0);
      // 1 s after that refusal (measured: a timer may fire a little early), 20 at once.
      while (Date.now() - refusedAt < 1_000)
        await new Promise((resolve) => setTimeout(resolve, 1_000 - (Date.now() - refusedAt)));
      const second = await burst(20);
      const doneAt = Date.now();
      const served = second.filter((r) => r.status === 200).length;
      const limited = second.filter((r) => r.status === 429);
      expect(served + limited.length).toBe(20);
      // At least the 1 s of refill since the refusal (10 tokens; 9 allows a millisecond of
      // rounding between the Redis and the Node clocks), and at most what 10/s refills between
      // the refusal was sent and the last answer came, plus the fraction of a token left then.
      expect(served).toBeGreaterThanOrEqual(9);
      const refilledAtMost = Math.floor(1 + ((doneAt - refusedSentAt + 2) * 10) / 1_000);
      expect(served).toBeLessThanOrEqual(Math.min(refilledAtMost, 19));
      expect(limited.length).toBeGreaterThan(0);
      for (const r of limited) {
        expect(r.code).toBe('RATE_LIMITED');
        // The next token at 10/s is at most 100 ms away: one second, the header's least value.
        expect(r.retryAfter).toBe('1');
      }
    } finally {
      await edge.stop();
    }
  });

  it('when a chunked body (no Content-Length) is exactly 64 KiB, then the edge lets it through to validation (not 413)', async () => {
    const body = new TextEncoder().encode(bodyOfSize(64 * KIB));
    expect(body.byteLength).toBe(64 * KIB);
    const parts = [0, 1, 2, 3].map((i) => body.slice(i * 16 * KIB, (i + 1) * 16 * KIB));
    const reply = await fetch(`${h.url}/v1/transactions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.poster.token}`,
        'content-type': 'application/json',
        'idempotency-key': `chunked-at-limit-${Date.now()}`,
      },
      body: new ReadableStream({
        pull(controller) {
          const next = parts.shift();
          if (next === undefined) controller.close();
          else controller.enqueue(next);
        },
      }),
      duplex: 'half',
    });
    const answer = (await reply.json()) as { error: { code: string } };
    expect(answer.error.code).not.toBe('PAYLOAD_TOO_LARGE');
    expect(reply.status).not.toBe(413);
    // Parsed whole by the application: the 65,518-char description is what it refuses.
    expect([reply.status, answer.error.code]).toEqual([422, 'INVALID_DESCRIPTION']);
  });

  it('when a body is 64 KiB it passes the edge; one byte more is 413 PAYLOAD_TOO_LARGE, declared or chunked', async () => {
    const atLimit = await post(h.url, t.poster.token, bodyOfSize(64 * KIB));
    expect(atLimit.status).toBe(422);
    expect(atLimit.body.error.code).toBe('INVALID_DESCRIPTION');
    const past = await post(h.url, t.poster.token, bodyOfSize(64 * KIB + 1));
    expect(past.status).toBe(413);
    expect(past.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    const chunks = [bodyOfSize(64 * KIB + 1)];
    const chunked = await fetch(`${h.url}/v1/transactions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.poster.token}`,
        'content-type': 'application/json',
        'idempotency-key': `chunked-${Date.now()}`,
      },
      body: new ReadableStream({
        pull(controller) {
          const next = chunks.shift();
          if (next === undefined) controller.close();
          else controller.enqueue(new TextEncoder().encode(next));
        },
      }),
      duplex: 'half',
    });
    expect(chunked.status).toBe(413);
    const smallChunked = await fetch(`${h.url}/v1/transactions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.poster.token}`,
        'content-type': 'application/json',
        'idempotency-key': `chunked-${Date.now()}-2`,
      },
      body: new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"entries":[]}'));
          controller.close();
        },
      }),
      duplex: 'half',
    });
    expect(((await smallChunked.json()) as { error: { code: string } }).error.code).toBe(
      'ENTRY_COUNT_OUT_OF_RANGE',
    );
  });

  it('when the edge is wider, then the application still refuses past 1 MiB with 413', async () => {
    const wide = await new LedgerHarness().start({
      LEDGER_EDGE_BODY_LIMIT_BYTES: String(4 * 1024 * KIB),
      SHUTDOWN_GRACE_MS: '200',
    });
    try {
      expect((await post(wide.url, t.poster.token, bodyOfSize(1024 * KIB))).body.error.code).toBe(
        'INVALID_DESCRIPTION',
      );
      const past = await post(wide.url, t.poster.token, bodyOfSize(1024 * KIB + 1));
      expect(past.status).toBe(413);
      expect(past.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    } finally {
      await wide.stop();
    }
  });

  it('when JSON nests 64 levels it is parsed; 65 levels are 422 INVALID_JSON_DEPTH before parsing', async () => {
    const nested = (levels: number) =>
      `{"metadata":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;
    const at = await post(h.url, t.poster.token, nested(64));
    expect(at.body.error.code).toBe('INVALID_METADATA');
    const past = await post(h.url, t.poster.token, nested(65));
    expect(past.status).toBe(422);
    expect(past.body.error.code).toBe('INVALID_JSON_DEPTH');
    const malformed = await post(h.url, t.poster.token, '{"entries": [');
    expect(malformed.status).toBe(422);
    expect(malformed.body.error.code).toBe('INVALID_REQUEST');
  });

  it("when a root tenant's monthly call quota is used up, then 429 QUOTA_EXCEEDED with Retry-After, counting its sub-tenants' calls", async () => {
    const metered = await new LedgerHarness().start({ LEDGER_MONTHLY_CALL_QUOTA: '3' });
    try {
      const root = await metered.tenant();
      const sub = await client(metered.url, root.partner.token).post('/v1/sub-tenants', {
        name: 'c',
        kind: 'sandbox',
        contact_email: 'c@d.ef',
      });
      const key = await client(metered.url, root.partner.token).post(
        `/v1/sub-tenants/${sub.body.sub_tenant_id}/keys`,
        { role: 'ledger_reader' },
      );
      const subReader = client(metered.url, key.body.secret as string);
      expect((await subReader.get('/v1/asset-types')).status).toBe(200);
      const over = await client(metered.url, root.reader.token).get('/v1/asset-types');
      expect(over.status).toBe(429);
      expect(over.body.error.code).toBe('QUOTA_EXCEEDED');
      expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await subReader.get('/v1/asset-types')).body.error.code).toBe('QUOTA_EXCEEDED');
      const other = await metered.tenant();
      expect((await client(metered.url, other.reader.token).get('/v1/asset-types')).status).toBe(
        200,
      );
    } finally {
      await metered.stop();
    }
  });

  it('when calls of one tenant race past its monthly quota, then exactly the quota is served (counted together, each in its place)', async () => {
    const metered = await new LedgerHarness().start({ LEDGER_MONTHLY_CALL_QUOTA: '12' });
    try {
      const root = await metered.tenant();
      const replies = await Promise.all(
        Array.from({ length: 30 }, () => root.reader.get('/v1/asset-types')),
      );
      expect(replies.filter((r) => r.status === 200)).toHaveLength(12);
      const refused = replies.filter((r) => r.status === 429);
      expect(refused).toHaveLength(18);
      expect(refused.every((r) => r.body.error.code === 'QUOTA_EXCEEDED')).toBe(true);
    } finally {
      await metered.stop();
    }
  });

  it('when a statement outlives the database budget, then 503 STATEMENT_TIMEOUT with Retry-After', async () => {
    const strict = await new LedgerHarness().start({ DATABASE_STATEMENT_TIMEOUT_MS: '200' });
    try {
      const reply = await h.pool.transaction(async (tx) => {
        await tx.query(sql.unsafe`LOCK TABLE ledger.asset_types IN ACCESS EXCLUSIVE MODE`);
        return client(strict.url, t.reader.token).get('/v1/asset-types');
      });
      expect(reply.status).toBe(503);
      expect(reply.body.error.code).toBe('STATEMENT_TIMEOUT');
      expect(reply.headers.get('retry-after')).toBe('1');
    } finally {
      await strict.stop();
    }
  });

  it('when an account stays locked past the lock budget, then the posting gets 409 LOCK_TIMEOUT with Retry-After and writes nothing', async () => {
    const usd = await h.assetType(t);
    const cash = await h.account(t, usd, { balance_floor: null });
    const wallet = await h.account(t, usd, { normal_side: 'credit' });
    const reply = await withTenant(h.pool, t.tenantId, async (tx) => {
      await tx.query(
        sql.unsafe`SELECT 1 FROM ledger.balances WHERE account_id = ${wallet} FOR UPDATE`,
      );
      return t.poster.post('/v1/transactions', {
        entries: [
          { account_id: cash, direction: 'debit', amount: '1.00' },
          { account_id: wallet, direction: 'credit', amount: '1.00' },
        ],
      });
    });
    expect(reply.status).toBe(409);
    expect(reply.body.error.code).toBe('LOCK_TIMEOUT');
    expect(reply.headers.get('retry-after')).toBe('1');
    expect((await t.reader.get(`/v1/accounts/${wallet}/balance`)).body.version).toBe('0');
  });
});
