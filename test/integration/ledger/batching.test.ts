/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return -- JSON replies in tests */
import { v7 as uuidv7 } from 'uuid';
import { loadConfig } from '../../../platform/config';
import { createDatabasePool, sql, type DatabasePool } from '../../../db/pool';
import { LOCK_TIMEOUT_MS, withSystem, withTenant } from '../../../db/ledger/context';
import { postTransactions } from '../../../db/ledger/transactions';
import {
  findCredentialsAndClaims,
  type CredentialClaimRequest,
  type LedgerRole,
} from '../../../db/ledger/tenants';
import { parseToken, sha256 } from '../../../services/ledger/credentials';
import {
  LedgerHarness,
  newKey,
  postingBatchFlights,
  postingCall,
  postingCounts,
  transfer,
  type TenantClients,
} from './support';

jest.setTimeout(120_000);

/**
 * Group commit (migration 0009, platform/batching.ts): concurrent postings of a tenant go to
 * Postgres in one statement and one transaction. Each posting must get exactly what it would get
 * alone, a refusal or an unexpected error must stay with its own posting, and batches in two
 * processes must never deadlock.
 */
describe('ledger group commit of postings', () => {
  const h = new LedgerHarness();
  let t: TenantClients;
  beforeAll(async () => {
    await h.start();
    t = await h.tenant();
  });
  afterAll(() => h.stop());

  const call = postingCall;
  const move = (from: string, to: string, amount: string) => [
    { accountId: to, direction: 'debit' as const, amount },
    { accountId: from, direction: 'credit' as const, amount },
  ];

  it('when one batch holds refusals of every kind among good postings, then each refusal has its exact code and nothing written, and every other posting is written, each seeing the counters the earlier ones left', async () => {
    const usd = await h.assetType(t);
    const source = await h.account(t, usd, { normal_side: 'credit', balance_floor: null });
    const wallet = await h.account(t, usd, { balance_floor: '0' });
    const frozen = await h.account(t, usd, { balance_floor: null });
    const sink = await h.account(t, usd, { balance_floor: null });
    expect((await t.admin.patch(`/v1/accounts/${frozen}`, { status: 'frozen' })).status).toBe(200);
    const unknown = uuidv7();
    const calls = [
      call(t.tenantId, move(source, wallet, '10.00')), // wallet 10.00
      call(t.tenantId, move(wallet, sink, '6.00')), // wallet 4.00
      call(t.tenantId, move(wallet, sink, '6.00')), // floor: 4.00 - 6.00 < 0
      call(t.tenantId, move(source, frozen, '1.00')),
      call(t.tenantId, move(source, unknown, '1.00')),
      call(t.tenantId, [
        { accountId: sink, direction: 'debit', amount: '1.00' },
        { accountId: source, direction: 'credit', amount: '2.00' },
      ]),
      call(t.tenantId, move(source, sink, '1.001')),
      call(t.tenantId, move(wallet, sink, '4.00')), // wallet 0.00: at the floor, allowed
    ];
    const results = await postTransactions(h.pool, t.tenantId, `${LOCK_TIMEOUT_MS}ms`, calls);
    const codes = results.map((r) => ('error' in r ? r.error.code : 'posted'));
    expect(codes).toEqual([
      'posted',
      'posted',
      'INSUFFICIENT_AVAILABLE',
      'ACCOUNT_NOT_ACTIVE',
      'REFERENCE_NOT_FOUND',
      'UNBALANCED_TRANSACTION',
      'INVALID_AMOUNT_SCALE',
      'posted',
    ]);
    expect(results[2]).toEqual({
      error: {
        code: 'INSUFFICIENT_AVAILABLE',
        message: `account ${wallet} would fall below its balance floor`,
        details: {
          account_id: wallet,
          available_minor: '400',
          available_after_minor: '-200',
          balance_floor_minor: '0',
        },
      },
    });
    expect(results[3]).toMatchObject({
      error: { details: { account_id: frozen, status: 'frozen' } },
    });
    expect(results[4]).toMatchObject({ error: { details: { account_ids: [unknown] } } });
    const last = (results[7] as { body: { accounts: { account_id: string }[] } }).body;
    expect(last.accounts.find((a) => a.account_id === wallet)).toEqual({
      account_id: wallet,
      available_after_minor: '0',
      available_after: '0.00',
    });
    const written = await withTenant(h.pool, t.tenantId, (tx) =>
      tx.anyFirst(sql.unsafe`
        SELECT transaction_id FROM ledger.transactions
        WHERE transaction_id = ANY(${sql.array(
          calls.map((c) => c.transactionId),
          'uuid',
        )}) ORDER BY transaction_id`),
    );
    expect(written).toEqual([calls[0]!, calls[1]!, calls[7]!].map((c) => c.transactionId).sort());
    expect((await t.reader.get(`/v1/accounts/${wallet}/balance`)).body.available_minor).toBe('0');
    expect((await t.reader.get(`/v1/accounts/${sink}/balance`)).body.available_minor).toBe('1000');
  });

  it('when many postings arrive at once over HTTP and some are refused (floor, frozen, unknown account, unbalanced, overflow), then only those fail, with their exact codes, and all the others are posted', async () => {
    const usd = await h.assetType(t, 0);
    const source = await h.account(t, usd, { normal_side: 'credit', balance_floor: null });
    const wallet = await h.account(t, usd, { balance_floor: '0' });
    const frozen = await h.account(t, usd, { balance_floor: null });
    const big = await h.account(t, usd, { balance_floor: null });
    const max = '9'.repeat(38);
    expect((await t.poster.post('/v1/transactions', transfer(source, big, max))).status).toBe(201);
    expect((await t.admin.patch(`/v1/accounts/${frozen}`, { status: 'frozen' })).status).toBe(200);
    const payer = await h.account(t, usd, { normal_side: 'credit', balance_floor: null });
    const sinks = await Promise.all(
      Array.from({ length: 4 }, () => h.account(t, usd, { balance_floor: null })),
    );
    const good = Array.from({ length: 40 }, (_, i) => transfer(payer, sinks[i % 4]!, '1'));
    const bad = [
      { body: transfer(wallet, source, '5'), status: 422, code: 'INSUFFICIENT_AVAILABLE' },
      { body: transfer(source, frozen, '1'), status: 409, code: 'ACCOUNT_NOT_ACTIVE' },
      { body: transfer(source, uuidv7(), '1'), status: 422, code: 'REFERENCE_NOT_FOUND' },
      {
        body: {
          entries: [
            { account_id: sinks[0], direction: 'debit', amount: '2' },
            { account_id: source, direction: 'credit', amount: '1' },
          ],
        },
        status: 422,
        code: 'UNBALANCED_TRANSACTION',
      },
      { body: transfer(source, big, max), status: 500, code: 'INTERNAL_ERROR' },
    ];
    const bodies = [...good.slice(0, 20), ...bad.map((b) => b.body), ...good.slice(20)];
    const replies = await Promise.all(bodies.map((b) => t.poster.post('/v1/transactions', b)));
    const badReplies = replies.slice(20, 20 + bad.length);
    expect(badReplies.map((r) => [r.status, r.body.error?.code])).toEqual(
      bad.map((b) => [b.status, b.code]),
    );
    const goodReplies = [...replies.slice(0, 20), ...replies.slice(20 + bad.length)];
    expect(goodReplies.map((r) => r.status)).toEqual(good.map(() => 201));
    const sinkTotals = await Promise.all(
      sinks.map(async (s) => (await t.reader.get(`/v1/accounts/${s}/balance`)).body.available),
    );
    expect(sinkTotals).toEqual(['10', '10', '10', '10']);
    expect((await t.reader.get(`/v1/accounts/${big}/balance`)).body.posted.debits_minor).toBe(max);
  });

  it('when postings arrive together over HTTP, then /metrics counts their batches per path: every posting in one call, and a wait and a flight per call', async () => {
    const usd = await h.assetType(t, 0);
    const payer = await h.account(t, usd, { normal_side: 'credit', balance_floor: null });
    const sink = await h.account(t, usd, { balance_floor: null });
    const before = await postingBatchFlights(h.url);
    const handedBack = (await postingCounts(h.url)).oneStatementHandedBack;
    const replies = await Promise.all(
      Array.from({ length: 30 }, () =>
        t.poster.post('/v1/transactions', transfer(payer, sink, '1')),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(replies.map(() => 201));
    expect((await postingCounts(h.url)).oneStatementHandedBack).toBe(handedBack);
    const after = await postingBatchFlights(h.url);
    const grown = (path: 'oneStatement' | 'general') => ({
      calls: after[path].calls - before[path].calls,
      postings: after[path].postings - before[path].postings,
      waits: after[path].waits - before[path].waits,
      flights: after[path].flights - before[path].flights,
    });
    const [one, general] = [grown('oneStatement'), grown('general')];
    expect(one.postings + general.postings).toBe(30);
    expect(one.calls + general.calls).toBeGreaterThanOrEqual(1);
    expect(one.calls + general.calls).toBeLessThanOrEqual(30);
    for (const path of [one, general])
      expect([path.waits, path.flights]).toEqual([path.calls, path.calls]);
    expect(after.oneStatement.flightSeconds + after.general.flightSeconds).toBeGreaterThan(0);
  });

  it('when one batch fails as a whole (a counter overflow), then the statement throws and writes nothing, which is what sends the API to post each one alone', async () => {
    const units = await h.assetType(t, 0);
    const source = await h.account(t, units, { normal_side: 'credit', balance_floor: null });
    const big = await h.account(t, units, { balance_floor: null });
    const small = await h.account(t, units, { balance_floor: null });
    const payer = await h.account(t, units, { normal_side: 'credit', balance_floor: null });
    const max = '9'.repeat(38);
    await postTransactions(h.pool, t.tenantId, `${LOCK_TIMEOUT_MS}ms`, [
      call(t.tenantId, move(source, big, max)),
    ]);
    const calls = [
      call(t.tenantId, move(payer, small, '1')),
      call(t.tenantId, move(source, big, max)),
    ];
    await expect(
      postTransactions(h.pool, t.tenantId, `${LOCK_TIMEOUT_MS}ms`, calls),
    ).rejects.toThrow(/overflow/);
    expect((await t.reader.get(`/v1/accounts/${small}/balance`)).body.available).toBe('0');
  });

  it('when a batch carries descriptions, external ids, metadata with quotes, backslashes and non-ASCII text, a backdated effective_at and a hold, then each is stored exactly as a lone posting stores it', async () => {
    const usd = await h.assetType(t);
    const source = await h.account(t, usd, { normal_side: 'credit', balance_floor: null });
    const sink = await h.account(t, usd, { balance_floor: null });
    const metadata = {
      note: 'a "quoted" \\ back\\slash, {braces}, ünïcödé ✓',
      n: [1, { deep: null }],
    };
    const effectiveAt = '2026-01-02T03:04:05.678Z';
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const externalId = `ext-${newKey()}`;
    const calls = [
      call(t.tenantId, move(source, sink, '1.00'), {
        description: 'd "1" \\ ,{}',
        externalId,
        metadata,
        effectiveAt,
      }),
      call(t.tenantId, move(source, sink, '2.00'), { pending: true, expiresAt }),
    ];
    const results = await postTransactions(h.pool, t.tenantId, `${LOCK_TIMEOUT_MS}ms`, calls);
    expect(results.map((r) => ('body' in r ? r.body.state : r.error.code))).toEqual([
      'committed',
      'pending',
    ]);
    const first = (await t.reader.get(`/v1/transactions/${calls[0]!.transactionId}`)).body;
    expect(first).toMatchObject({
      description: 'd "1" \\ ,{}',
      external_id: externalId,
      metadata,
      effective_at: effectiveAt,
      state: 'committed',
    });
    const hold = (await t.reader.get(`/v1/transactions/${calls[1]!.transactionId}`)).body;
    expect(hold).toMatchObject({ state: 'pending', expires_at: expiresAt, finalized_at: null });
    const outbox = await withTenant(h.pool, t.tenantId, (tx) =>
      tx.anyFirst(
        sql.unsafe`SELECT transaction_id FROM ledger.hold_outbox WHERE transaction_id = ${calls[1]!.transactionId}`,
      ),
    );
    expect(outbox).toEqual([calls[1]!.transactionId]);
  });

  it('when concurrent postings carry the same external_id under different keys, then one is posted and every other one is 409 DUPLICATE_TRANSACTION (a batch holding two of them is re-run posting by posting)', async () => {
    const usd = await h.assetType(t);
    const source = await h.account(t, usd, { normal_side: 'credit', balance_floor: null });
    const sink = await h.account(t, usd, { balance_floor: null });
    const externalId = `ext-${newKey()}`;
    const replies = await Promise.all(
      Array.from({ length: 12 }, () =>
        t.poster.post(
          '/v1/transactions',
          transfer(source, sink, '1.00', { external_id: externalId }),
        ),
      ),
    );
    expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of replies.filter((x) => x.status !== 201)) {
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe('DUPLICATE_TRANSACTION');
    }
    expect((await t.reader.get(`/v1/accounts/${sink}/balance`)).body.available).toBe('1.00');
  });

  /** Pools as two API processes would have them, with slonik's deadlock retries off. */
  async function twoPools(): Promise<[DatabasePool, DatabasePool]> {
    const open = () =>
      createDatabasePool(loadConfig(), {
        applicationName: 'ledger-test-batches',
        maximumPoolSize: 4,
        retryLimit: 0,
      });
    return [await open(), await open()];
  }

  it('when two processes post batches over crossing account pairs at the same time, then no batch deadlocks (each locks its whole account set once, in account_id order) and the balances equal the journal', async () => {
    const usd = await h.assetType(t);
    const accounts = await Promise.all(
      Array.from({ length: 6 }, () => h.account(t, usd, { balance_floor: null })),
    );
    const pools = await twoPools();
    try {
      const rounds = 15;
      const work = pools.flatMap((pool, p) =>
        Array.from({ length: 2 }, async (_, lane) => {
          for (let round = 0; round < rounds; round++) {
            // Process 0 moves forwards around the ring, process 1 backwards: every pair crosses.
            const calls = accounts.map((from, i) => {
              const to =
                accounts[(i + (p === 0 ? 1 : accounts.length - 1) + lane) % accounts.length]!;
              return call(
                t.tenantId,
                move(from, to === from ? accounts[(i + 2) % 6]! : to, '0.01'),
              );
            });
            const results = await postTransactions(pool, t.tenantId, `${LOCK_TIMEOUT_MS}ms`, calls);
            expect(results.every((r) => 'body' in r)).toBe(true);
          }
        }),
      );
      await Promise.all(work);
      const drift = await withTenant(h.pool, t.tenantId, (tx) =>
        tx.anyFirst(sql.unsafe`
          SELECT b.account_id FROM ledger.balances b
          LEFT JOIN LATERAL (
            SELECT coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'debit'), 0) AS d,
                   coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'credit'), 0) AS c
            FROM ledger.entries e WHERE e.account_id = b.account_id) s ON true
          WHERE b.account_id = ANY(${sql.array(accounts, 'uuid')})
            AND (b.posted_debits, b.posted_credits) IS DISTINCT FROM (s.d, s.c)`),
      );
      expect(drift).toEqual([]);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it('when the same Idempotency-Key comes twice in one batch of claims, then the first claims it and the second finds it in flight; over HTTP, concurrent copies give one transaction, the others 409 IDEMPOTENCY_IN_FLIGHT with Retry-After or the replayed 201', async () => {
    const usd = await h.assetType(t);
    const source = await h.account(t, usd, { normal_side: 'credit', balance_floor: null });
    const wallet = await h.account(t, usd, { balance_floor: null });
    const { keyId, secret } = parseToken(t.poster.token)!;
    const key = newKey();
    const claim = {
      endpoint: 'POST /v1/transactions',
      key,
      requestSha256: sha256('x'),
      lockMs: 30_000,
    };
    const other = { ...claim, requestSha256: sha256('y') };
    const rows = await findCredentialsAndClaims(h.pool, [
      { keyId, secretSha256: sha256(secret), role: 'ledger_poster', claim },
      { keyId, secretSha256: sha256(secret), role: 'ledger_poster', claim },
      { keyId, secretSha256: sha256(secret), role: 'ledger_poster', claim: other },
      { keyId: uuidv7(), secretSha256: sha256(secret), role: 'ledger_poster', claim },
    ]);
    expect(rows.map((r) => r && [r.claimed, r.state])).toEqual([
      [true, 'in_flight'],
      [false, 'in_flight'],
      [false, 'in_flight'],
      null,
    ]);

    const httpKey = newKey();
    const body = transfer(source, wallet, '1.00');
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => t.poster.post('/v1/transactions', body, httpKey)),
    );
    const created = replies.filter((r) => r.status === 201);
    const ids = new Set(created.map((r) => r.body.transaction_id as string));
    expect(ids.size).toBe(1);
    for (const r of replies) {
      if (r.status === 201) continue;
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe('IDEMPOTENCY_IN_FLIGHT');
      expect(r.headers.get('retry-after')).toBe('1');
    }
    const replay = await t.poster.post('/v1/transactions', body, httpKey);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.transaction_id).toBe([...ids][0]);
    const mismatch = await t.poster.post(
      '/v1/transactions',
      transfer(source, wallet, '2.00'),
      httpKey,
    );
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.error.code).toBe('IDEMPOTENCY_KEY_MISMATCH');
    expect((await t.reader.get(`/v1/accounts/${wallet}/balance`)).body.available).toBe('1.00');
  });
  it('when one batch of claims mixes keys, tenants, copies of one key with the same and another body, a completed key, lapsed claims, a wrong secret and a wrong role, then every row is the one authenticate_and_claim gives it with the requests run one by one in (tenant, endpoint, key, ord) order, and the idempotency rows end the same', async () => {
    const u = await h.tenant();
    const poster = parseToken(t.poster.token)!;
    const admin = parseToken(t.admin.token)!;
    const reader = parseToken(t.reader.token)!;
    const other = parseToken(u.poster.token)!;
    const unknown = { keyId: uuidv7(), secret: poster.secret };
    const tenantOf = new Map<string, string>([
      [poster.keyId, t.tenantId],
      [admin.keyId, t.tenantId],
      [reader.keyId, t.tenantId],
      [other.keyId, u.tenantId],
    ]);
    const posting = 'POST /v1/transactions';
    const accounts = 'POST /v1/accounts';
    const base = newKey();
    const name = (s: string) => `${base}-${s}`;
    const [x, y] = [sha256('x'), sha256('y')];
    const replayed = { transaction_id: 'replayed' };
    await withTenant(h.pool, t.tenantId, (tx) =>
      tx.query(sql.unsafe`
        INSERT INTO ledger.idempotency_keys AS k (tenant_id, endpoint, key, request_sha256, state, locked_until,
                                                  response_status, response_body)
        SELECT ${t.tenantId}::uuid, ${posting}, v.key, ${sql.binary(x)}, v.state, now() + v.lock::interval,
               v.status::smallint, CASE WHEN v.state = 'completed' THEN ${sql.jsonb(replayed)} END
        FROM (VALUES (${name('done')}, 'completed', '-1 minute', 201),
                     (${name('lapsed')}, 'in_flight', '-1 minute', NULL),
                     (${name('lapsed-refused-first')}, 'in_flight', '-1 minute', NULL),
                     (${name('held')}, 'in_flight', '1 minute', NULL)) AS v(key, state, lock, status)`),
    );
    const req = (
      key: { keyId: string; secret: string },
      endpoint: string | null,
      idempotencyKey: string | null,
      requestSha256: Buffer,
      as: { secret?: string; role?: LedgerRole } = {},
    ): CredentialClaimRequest => ({
      keyId: key.keyId,
      secretSha256: sha256(as.secret ?? key.secret),
      role: as.role ?? 'ledger_poster',
      claim:
        endpoint && idempotencyKey
          ? { endpoint, key: idempotencyKey, requestSha256, lockMs: 30_000 }
          : null,
    });
    const requests = [
      req(poster, posting, name('fresh'), x), // 0 claims
      req(poster, posting, name('lapsed-refused-first'), y), // 1 another body's lapsed claim: refused
      req(other, posting, name('fresh'), x), // 2 another tenant: its own claim
      req(poster, posting, name('done'), x), // 3 completed: the replay
      req(poster, posting, name('fresh'), x), // 4 copy of 0: in flight
      req(admin, posting, name('wrong-secret'), x, { secret: 'nope', role: 'ledger_admin' }), // 5
      req(poster, posting, name('lapsed'), x), // 6 takes the lapsed claim over
      req(poster, posting, name('fresh'), y), // 7 copy of 0 with another body: in flight
      req(reader, posting, name('wrong-role'), x), // 8 a reader key on a poster route
      req(poster, posting, name('lapsed-refused-first'), x), // 9 takes it over after 1 was refused
      req(poster, posting, name('done'), y), // 10 completed, another body
      req(unknown, posting, name('fresh'), x), // 11 unknown key: no row
      req(poster, posting, name('lapsed'), x), // 12 copy of 6: in flight
      req(poster, posting, name('held'), x), // 13 claim held by someone else: in flight
      req(poster, null, null, x), // 14 no usable Idempotency-Key: no claim
      req(poster, accounts, name('fresh'), y), // 15 same key, another endpoint: claims
      req(poster, posting, name('lapsed-refused-first'), x), // 16 copy of 9: in flight
    ];
    const stateOf = (tx: Parameters<Parameters<typeof withSystem>[1]>[0]) =>
      tx.any(sql.unsafe`
        SELECT tenant_id, endpoint, key, request_sha256, state, response_status, response_body,
               locked_until > now() AS held
        FROM ledger.idempotency_keys
        WHERE tenant_id IN (${t.tenantId}::uuid, ${u.tenantId}::uuid) AND starts_with(key, ${base})
        ORDER BY tenant_id, endpoint, key`);

    // The per-request path (0009's loop), in a transaction rolled back after: the same start state.
    const nullsLast = (a: string | null, b: string | null) =>
      a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1;
    const order = requests
      .map((r, i) => ({ r, i, tenant: tenantOf.get(r.keyId) ?? null }))
      .filter((e) => e.tenant !== null)
      .sort(
        (a, b) =>
          nullsLast(a.tenant, b.tenant) ||
          nullsLast(a.r.claim?.endpoint ?? null, b.r.claim?.endpoint ?? null) ||
          nullsLast(a.r.claim?.key ?? null, b.r.claim?.key ?? null) ||
          a.i - b.i,
      );
    let reference: Awaited<ReturnType<typeof findCredentialsAndClaims>> = [];
    let referenceState: readonly unknown[] = [];
    let rolledBack = false;
    await h.pool
      .transaction(async (tx) => {
        const rows: typeof reference = requests.map(() => null);
        for (const { r, i } of order) {
          rows[i] = (await tx.maybeOne(sql.unsafe`
            SELECT * FROM ledger.authenticate_and_claim(${r.keyId}::uuid, ${sql.binary(r.secretSha256)},
              ${r.role}, ${r.claim?.endpoint ?? null}, ${r.claim?.key ?? null},
              ${r.claim ? sql.binary(r.claim.requestSha256) : null}, ${r.claim?.lockMs ?? null}::int)`)) as
            (typeof reference)[number] | null;
        }
        await tx.query(sql.unsafe`SELECT set_config('ledger.system', 'on', true)`);
        reference = rows;
        referenceState = await stateOf(tx);
        rolledBack = true;
        throw new Error('roll back');
      })
      .catch((error: unknown) => {
        if (!rolledBack) throw error;
      });

    const rows = await findCredentialsAndClaims(h.pool, requests);
    expect(rows).toEqual(reference);
    expect(await withSystem(h.pool, stateOf)).toEqual(referenceState);

    const hashOf = (value: Buffer | string | null) =>
      value === null
        ? null
        : (typeof value === 'string' ? Buffer.from(value.slice(2), 'hex') : value).equals(x)
          ? 'x'
          : 'y';
    expect(
      rows.map((r) => r && [r.claimed, hashOf(r.request_sha256), r.state, r.response_status]),
    ).toEqual([
      [true, 'x', 'in_flight', null],
      [false, 'x', 'in_flight', null],
      [true, 'x', 'in_flight', null],
      [false, 'x', 'completed', 201],
      [false, 'x', 'in_flight', null],
      [null, null, null, null],
      [true, 'x', 'in_flight', null],
      [false, 'x', 'in_flight', null],
      [null, null, null, null],
      [true, 'x', 'in_flight', null],
      [false, 'x', 'completed', 201],
      null,
      [false, 'x', 'in_flight', null],
      [false, 'x', 'in_flight', null],
      [null, null, null, null],
      [true, 'y', 'in_flight', null],
      [false, 'x', 'in_flight', null],
    ]);
    expect(rows[3]!.response_body).toEqual(replayed);
    expect(rows[5]!.key_id).toBe(admin.keyId);
    expect(rows[8]!.role).toBe('ledger_reader');
    expect(rows[2]!.tenant_id).toBe(u.tenantId);
    const written = (await withSystem(h.pool, stateOf)) as readonly {
      tenant_id: string;
      endpoint: string;
      key: string;
      held: boolean;
    }[];
    expect(
      written
        .map((r) =>
          [
            r.tenant_id === t.tenantId ? 't' : 'u',
            r.endpoint,
            r.key.slice(base.length + 1),
            r.held,
          ].join(' '),
        )
        .sort(),
    ).toEqual(
      [
        `t ${accounts} fresh true`,
        `t ${posting} done false`,
        `t ${posting} fresh true`,
        `t ${posting} held true`,
        `t ${posting} lapsed true`,
        `t ${posting} lapsed-refused-first true`,
        `u ${posting} fresh true`,
      ].sort(),
    );
  });
});
