/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access -- JSON replies in tests */
import { sql } from '../../../db/pool';
import { withSystem, withTenant } from '../../../db/ledger/context';
import { postTransactionsAuthorized } from '../../../db/ledger/transactions';
import { sha256 } from '../../../services/ledger/credentials';
import { POSTING_ENDPOINT } from '../../../services/ledger/transactions';
import {
  client,
  LedgerHarness,
  newKey,
  postingCall,
  postingCounts,
  type TenantClients,
} from './support';

jest.setTimeout(60_000);

/**
 * The posting route's common case: a key that authenticated before in the process is checked in
 * the posting's own statement, with the claim of its Idempotency-Key (migration 0013). Every test
 * first makes the service remember its key with one posting, then changes what the key's check
 * or the claim depends on.
 */
describe('ledger postings in one statement with the check of their key', () => {
  const h = new LedgerHarness();
  let t: TenantClients, usd: string, cash: string;
  beforeAll(async () => ({ t, usd, cash } = await h.startWithCash()));
  afterAll(() => h.stop());

  const wallet = () => h.account(t, usd, { normal_side: 'credit' });
  const deposit = (to: string, amount: string, extra: Record<string, unknown> = {}) => ({
    entries: [
      { account_id: cash, direction: 'debit', amount },
      { account_id: to, direction: 'credit', amount },
    ],
    ...extra,
  });
  const keyIdOf = (token: string) => token.slice(3, 35);
  const system = (statement: ReturnType<typeof sql.unsafe>, pool = h.pool) =>
    withSystem(pool, (tx) => tx.query(statement));
  const changeKey = (token: string, change: ReturnType<typeof sql.fragment>, pool = h.pool) =>
    system(
      sql.unsafe`UPDATE ledger.api_keys SET ${change} WHERE replace(key_id::text, '-', '') = ${keyIdOf(token)}`,
      pool,
    );
  const transactionsOn = async (accountId: string) =>
    Number(
      await withTenant(h.pool, t.tenantId, (tx) =>
        tx.oneFirst(
          sql.unsafe`SELECT count(DISTINCT transaction_id) FROM ledger.entries WHERE account_id = ${accountId}`,
        ),
      ),
    );
  const claimOf = (tenantId: string, key: string) =>
    withSystem(h.pool, (tx) =>
      tx.maybeOne(sql.unsafe`
        SELECT state, response_status, response_body FROM ledger.idempotency_keys
        WHERE tenant_id = ${tenantId} AND endpoint = ${POSTING_ENDPOINT} AND key = ${key}`),
    ) as Promise<{ state: string; response_status: number; response_body: unknown } | null>;

  /** A fresh poster key that the service has seen authenticate (one posting). */
  async function rememberedPoster() {
    const poster = client(h.url, await h.key(t.tenantId, 'ledger_poster'));
    expect((await poster.post('/v1/transactions', deposit(await wallet(), '1.00'))).status).toBe(
      201,
    );
    return poster;
  }

  it('when a remembered key posts, then its Idempotency-Key holds the 201 it answered, and a replay or another body with it gets what the general path gives', async () => {
    const poster = await rememberedPoster();
    const a = await wallet();
    const key = newKey();
    const first = await poster.post('/v1/transactions', deposit(a, '2.50'), key);
    expect(first.status).toBe(201);
    expect(await claimOf(t.tenantId, key)).toEqual({
      state: 'completed',
      response_status: 201,
      response_body: first.body,
    });
    const replay = await poster.post('/v1/transactions', deposit(a, '2.50'), key);
    expect(replay.status).toBe(201);
    expect(replay.body).toEqual(first.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    const other = await poster.post('/v1/transactions', deposit(a, '9.99'), key);
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('IDEMPOTENCY_KEY_MISMATCH');
    expect(await transactionsOn(a)).toBe(1);
  });

  it('when a remembered key is revoked or expires, then its next posting gets 401 and nothing is written', async () => {
    for (const [change, code] of [
      [sql.fragment`revoked_at = now()`, 'UNAUTHENTICATED'],
      [sql.fragment`expires_at = now() - interval '1 second'`, 'CREDENTIAL_EXPIRED'],
    ] as const) {
      const poster = await rememberedPoster();
      await changeKey(poster.token, change);
      const a = await wallet();
      const key = newKey();
      const reply = await poster.post('/v1/transactions', deposit(a, '1.00'), key);
      expect(reply.status).toBe(401);
      expect(reply.body.error.code).toBe(code);
      expect(await transactionsOn(a)).toBe(0);
      expect(await claimOf(t.tenantId, key)).toBeNull();
    }
  });

  it('when the tenant or its parent of a remembered key is suspended, then 403 TENANT_SUSPENDED and nothing is written; reactivated, the key posts again', async () => {
    const sub = await t.partner.post('/v1/sub-tenants', {
      name: 'sub',
      kind: 'sandbox',
      contact_email: 'ops@example.com',
    });
    expect(sub.status).toBe(201);
    const subId = sub.body.sub_tenant_id as string;
    const subAdmin = client(h.url, await h.key(subId, 'ledger_admin'));
    const subUsd = (await subAdmin.post('/v1/asset-types', { code: 'USD', kind: 'fiat', scale: 2 }))
      .body.asset_type_id as string;
    const account = async (side: string, floor: string | null) =>
      (
        await subAdmin.post('/v1/accounts', {
          asset_type_id: subUsd,
          normal_side: side,
          balance_floor: floor,
        })
      ).body.account_id as string;
    const subCash = await account('debit', null);
    const subWallet = await account('credit', '0.00');
    const body = {
      entries: [
        { account_id: subCash, direction: 'debit', amount: '1.00' },
        { account_id: subWallet, direction: 'credit', amount: '1.00' },
      ],
    };
    const poster = client(h.url, await h.key(subId, 'ledger_poster'));
    expect((await poster.post('/v1/transactions', body)).status).toBe(201);

    for (const suspended of [subId, t.tenantId]) {
      await system(
        sql.unsafe`UPDATE ledger.tenants SET status = 'suspended' WHERE tenant_id = ${suspended}`,
      );
      const key = newKey();
      const reply = await poster.post('/v1/transactions', body, key);
      expect(reply.status).toBe(403);
      expect(reply.body.error.code).toBe('TENANT_SUSPENDED');
      expect(await claimOf(subId, key)).toBeNull();
      await system(
        sql.unsafe`UPDATE ledger.tenants SET status = 'active' WHERE tenant_id = ${suspended}`,
      );
      expect((await poster.post('/v1/transactions', body)).status).toBe(201);
    }
    const posted = await withTenant(h.pool, subId, (tx) =>
      tx.oneFirst(sql.unsafe`SELECT count(*) FROM ledger.entries WHERE account_id = ${subWallet}`),
    );
    expect(Number(posted)).toBe(3);
  });

  it('when a remembered key posts a refused transaction, then the refusal is the key’s answer; a frozen account’s refusal frees the key', async () => {
    const poster = await rememberedPoster();
    const a = await wallet();
    const b = await wallet();
    const overdraw = {
      entries: [
        { account_id: a, direction: 'debit', amount: '5.00' },
        { account_id: b, direction: 'credit', amount: '5.00' },
      ],
    };
    const key = newKey();
    const refused = await poster.post('/v1/transactions', overdraw, key);
    expect(refused.status).toBe(422);
    expect(refused.body.error.code).toBe('INSUFFICIENT_AVAILABLE');
    expect((await poster.post('/v1/transactions', deposit(a, '5.00'))).status).toBe(201);
    const replay = await poster.post('/v1/transactions', overdraw, key);
    expect(replay.status).toBe(422);
    expect(replay.body).toEqual(refused.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    expect((await t.admin.patch(`/v1/accounts/${b}`, { status: 'frozen' })).status).toBe(200);
    const thawKey = newKey();
    const frozen = await poster.post('/v1/transactions', overdraw, thawKey);
    expect(frozen.status).toBe(409);
    expect(frozen.body.error.code).toBe('ACCOUNT_NOT_ACTIVE');
    expect(frozen.headers.get('retry-after')).toBe('5');
    expect(await claimOf(t.tenantId, thawKey)).toBeNull();
    expect((await t.admin.patch(`/v1/accounts/${b}`, { status: 'active' })).status).toBe(200);
    expect((await poster.post('/v1/transactions', overdraw, thawKey)).status).toBe(201);
    expect(await transactionsOn(b)).toBe(1);
  });

  it('when a remembered key posts an external_id that exists, then 409 DUPLICATE_TRANSACTION, and its replay too', async () => {
    const poster = await rememberedPoster();
    const a = await wallet();
    const externalId = `ext-${newKey()}`;
    expect(
      (await poster.post('/v1/transactions', deposit(a, '1.00', { external_id: externalId })))
        .status,
    ).toBe(201);
    const key = newKey();
    const again = deposit(a, '1.00', { external_id: externalId });
    const duplicate = await poster.post('/v1/transactions', again, key);
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error.code).toBe('DUPLICATE_TRANSACTION');
    const replay = await poster.post('/v1/transactions', again, key);
    expect(replay.body).toEqual(duplicate.body);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await transactionsOn(a)).toBe(1);
  });

  it('when one remembered key sends the same request 12 times at once, then exactly one transaction, and every 201 is its body', async () => {
    const poster = await rememberedPoster();
    const a = await wallet();
    const key = newKey();
    const replies = await Promise.all(
      Array.from({ length: 12 }, () => poster.post('/v1/transactions', deposit(a, '3.00'), key)),
    );
    const created = replies.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const r of created) expect(r.body).toEqual(created[0]!.body);
    for (const r of replies.filter((x) => x.status !== 201)) {
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe('IDEMPOTENCY_IN_FLIGHT');
    }
    expect(await transactionsOn(a)).toBe(1);
  });

  it('when a batch mixes good postings, a stale key, a taken and a repeated Idempotency-Key and a refusal, then each gets its own answer and nothing is written for the handed back', async () => {
    const token = await h.key(t.tenantId, 'ledger_poster');
    const keyId = [...keyIdOf(token)]
      .map((c, i) => ([8, 12, 16, 20].includes(i) ? `-${c}` : c))
      .join('');
    const secretSha256 = sha256(token.slice(36));
    const a = await wallet();
    const empty = await wallet();
    const taken = newKey();
    await withTenant(h.pool, t.tenantId, (tx) =>
      tx.query(sql.unsafe`
        INSERT INTO ledger.idempotency_keys (tenant_id, endpoint, key, request_sha256, state, locked_until)
        VALUES (${t.tenantId}, ${POSTING_ENDPOINT}, ${taken}, '\\x00', 'in_flight', now() + interval '1 minute')`),
    );
    const keys = [newKey(), newKey(), taken, 'repeated', 'repeated', newKey(), newKey()];
    const call = (amount: string, from = cash) =>
      postingCall(t.tenantId, [
        { accountId: from, direction: 'debit', amount },
        { accountId: a, direction: 'credit', amount },
      ]);
    const calls = [
      call('1.00'),
      call('1.00'),
      call('1.00'),
      call('1.00'),
      call('1.00'),
      call('1.00', empty), // an empty wallet with a floor of 0: refused
      call('2.00'),
    ].map((c, i) => ({
      ...c,
      keyId,
      secretSha256: i === 1 ? sha256('not the secret') : secretSha256,
      idempotencyKey: keys[i]!,
      requestSha256: sha256(`request ${i}`),
    }));
    const results = await postTransactionsAuthorized(
      h.pool,
      t.tenantId,
      {
        lockTimeout: '2000ms',
        role: 'ledger_poster',
        endpoint: POSTING_ENDPOINT,
        lockMs: 30_000,
        status: 201,
      },
      calls,
    );
    expect(
      results.map((r) => Object.keys(r)[0] + ('fallback' in r ? `:${r.fallback}` : '')),
    ).toEqual([
      'body',
      'fallback:credential',
      'fallback:key',
      'body',
      'fallback:key',
      'error',
      'body',
    ]);
    expect((results[5] as { error: { code: string } }).error.code).toBe('INSUFFICIENT_AVAILABLE');
    expect(await transactionsOn(a)).toBe(3);
    expect(await claimOf(t.tenantId, keys[1]!)).toBeNull();
    expect((await claimOf(t.tenantId, taken))!.state).toBe('in_flight');
    expect((await claimOf(t.tenantId, 'repeated'))!.state).toBe('completed');
    expect((await claimOf(t.tenantId, keys[5]!))!.state).toBe('in_flight');
    for (const i of [0, 3, 6]) {
      const claim = (await claimOf(t.tenantId, keys[i]!))!;
      expect(claim).toEqual({
        state: 'completed',
        response_status: 201,
        response_body: (results[i] as { body: unknown }).body,
      });
    }
  });

  it('when postings take either path, then /metrics counts them by path and outcome', async () => {
    const counts = async () => Object.values(await postingCounts(h.url));
    const before = await counts();
    const poster = await rememberedPoster(); // general, created
    const a = await wallet();
    const key = newKey();
    expect((await poster.post('/v1/transactions', deposit(a, '1.00'), key)).status).toBe(201);
    expect((await poster.post('/v1/transactions', deposit(a, '1.00'), key)).status).toBe(201); // replay
    const overdraw = {
      entries: [
        { account_id: a, direction: 'debit', amount: '9.00' },
        { account_id: cash, direction: 'credit', amount: '9.00' },
      ],
    };
    expect((await poster.post('/v1/transactions', overdraw)).status).toBe(422);
    const after = await counts();
    expect(after.map((n, i) => n - before[i]!)).toEqual([1, 1, 1, 1]);
  });

  it('when a remembered key’s request is handed back to the general path, then it is metered once, not at all when its key no longer passes, and a revoked key over quota is 401 before 429', async () => {
    const metered = await new LedgerHarness().start({ LEDGER_MONTHLY_CALL_QUOTA: '6' });
    try {
      const m = await metered.tenant();
      const mUsd = await metered.assetType(m); // call 1
      const mCash = await metered.account(m, mUsd, { balance_floor: null }); // call 2
      const mWallet = await metered.account(m, mUsd, { normal_side: 'credit' }); // call 3
      const body = {
        entries: [
          { account_id: mCash, direction: 'debit', amount: '1.00' },
          { account_id: mWallet, direction: 'credit', amount: '1.00' },
        ],
      };
      const key = newKey();
      expect((await m.poster.post('/v1/transactions', body, key)).status).toBe(201); // 4, remembered
      // 5: the key is taken, so the request is handed back and replayed; counted twice, it would be 429.
      const replay = await m.poster.post('/v1/transactions', body, key);
      expect(replay.status).toBe(201);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      // Not counted: the remembered key is revoked, so the call is not an authenticated one.
      await changeKey(m.poster.token, sql.fragment`revoked_at = now()`, metered.pool);
      expect((await m.poster.post('/v1/transactions', body)).status).toBe(401);
      const another = client(metered.url, await metered.key(m.tenantId, 'ledger_poster'));
      expect((await another.post('/v1/transactions', body)).status).toBe(201); // 6
      const over = await another.post('/v1/transactions', body);
      expect(over.status).toBe(429);
      expect(over.body.error.code).toBe('QUOTA_EXCEEDED');
      // Over quota and revoked since it was remembered: authentication comes first, as always.
      await changeKey(another.token, sql.fragment`revoked_at = now()`, metered.pool);
      const revoked = await another.post('/v1/transactions', body);
      expect(revoked.status).toBe(401);
      expect(revoked.body.error.code).toBe('UNAUTHENTICATED');
    } finally {
      await metered.stop();
    }
  });
});
