/* eslint-disable @typescript-eslint/no-explicit-any -- JSON replies in tests */
import { v7 as uuidv7 } from 'uuid';
import { meteringKeys } from '../../support/platform-metering';
import { loadConfig } from '../../../platform/config';
import { createDatabasePool, sql, type DatabasePool } from '../../../db/pool';
import { LOCK_TIMEOUT_MS, withSystem } from '../../../db/ledger/context';
import type { PostingCall } from '../../../db/ledger/transactions';
import { insertTenant, type LedgerRole } from '../../../db/ledger/tenants';
import { drainAsyncBalances } from '../../../db/ledger/accounts';
import { issueKey } from '../../../services/ledger/credentials';
import { startTestService, type TestService } from '../../support/services';
import { scrapeMetrics } from '../../support/metrics-scrape';

export interface Reply<T = Record<string, any>> {
  status: number;
  body: T;
  headers: Headers;
}

export interface LedgerClient {
  token: string;
  get<T = Record<string, any>>(path: string): Promise<Reply<T>>;
  post<T = Record<string, any>>(
    path: string,
    body?: unknown,
    key?: string | null,
  ): Promise<Reply<T>>;
  patch<T = Record<string, any>>(
    path: string,
    body: unknown,
    key?: string | null,
  ): Promise<Reply<T>>;
  del<T = Record<string, any>>(path: string, key?: string | null): Promise<Reply<T>>;
}

let keyCounter = 0;
export const newKey = () =>
  `k-${Date.now().toString(36)}-${++keyCounter}-${Math.random().toString(36).slice(2)}`;

export async function call<T = Record<string, any>>(
  url: string,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
  key?: string | null,
): Promise<Reply<T>> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key !== null && method !== 'GET') headers['idempotency-key'] = key ?? newKey();
  const response = await fetch(url + path, {
    method,
    headers,
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: (text ? JSON.parse(text) : undefined) as T,
    headers: response.headers,
  };
}

export function client(url: string, token: string): LedgerClient {
  return {
    token,
    get: (path) => call(url, 'GET', path, token),
    post: (path, body, key) => call(url, 'POST', path, token, body, key),
    patch: (path, body, key) => call(url, 'PATCH', path, token, body, key),
    del: (path, key) => call(url, 'DELETE', path, token, undefined, key),
  };
}

export interface TenantClients {
  tenantId: string;
  admin: LedgerClient;
  poster: LedgerClient;
  reader: LedgerClient;
  partner: LedgerClient;
}

export class LedgerHarness {
  service!: TestService;
  pool!: DatabasePool;

  async start(overrides: NodeJS.ProcessEnv = {}): Promise<this> {
    // A monthly quota of its own is a policy of its own: in a quota tenant of its own.
    const ownQuota =
      overrides.LEDGER_MONTHLY_CALL_QUOTA !== undefined && overrides.LEDGER_QUOTA_KEY === undefined
        ? await meteringKeys()
        : {};
    // The sweep schedule is made only by the test that asserts it (and deletes it after).
    // Tests share 127.0.0.1: the edge is widened except where a test asserts its defaults.
    this.service = await startTestService('ledger', {
      LEDGER_HOLD_SWEEP_SCHEDULE: 'false',
      LEDGER_EDGE_RATE_PER_SECOND: '100000',
      LEDGER_EDGE_BURST: '100000',
      ...ownQuota,
      ...overrides,
    });
    this.pool = await createDatabasePool(loadConfig(), {
      applicationName: 'ledger-test',
      maximumPoolSize: 4,
    });
    return this;
  }

  /**
   * The prologue of most ledger test files: the service started, a fresh tenant, an asset type of
   * scale 2 and a debit-normal cash account without a floor (the source of deposits).
   */
  async startWithCash(
    overrides: NodeJS.ProcessEnv = {},
  ): Promise<{ t: TenantClients; usd: string; cash: string }> {
    await this.start(overrides);
    const t = await this.tenant();
    const usd = await this.assetType(t);
    const cash = await this.account(t, usd, {
      normal_side: 'debit',
      balance_floor: null,
      name: 'cash',
    });
    return { t, usd, cash };
  }

  async stop(): Promise<void> {
    await this.service?.close();
    await this.pool?.end();
  }

  get url(): string {
    return this.service.url;
  }

  async key(tenantId: string, role: LedgerRole, ttlDays: number | null = null): Promise<string> {
    return (
      await withSystem(this.pool, (tx) => issueKey(tx, { tenantId, role, label: 'test', ttlDays }))
    ).secret;
  }

  /** A fresh root tenant with one key of each role, as the operator CLI would make them. */
  async tenant(name = 'test'): Promise<TenantClients> {
    const tenantId = uuidv7();
    await withSystem(this.pool, (tx) =>
      insertTenant(tx, { tenantId, parentId: null, name, kind: 'sandbox', contactEmail: null }),
    );
    const [admin, poster, reader, partner] = await Promise.all(
      (['ledger_admin', 'ledger_poster', 'ledger_reader', 'ledger_partner'] as const).map((role) =>
        this.key(tenantId, role),
      ),
    );
    return {
      tenantId,
      admin: client(this.url, admin!),
      poster: client(this.url, poster!),
      reader: client(this.url, reader!),
      partner: client(this.url, partner!),
    };
  }

  async assetType(
    t: Pick<TenantClients, 'admin'>,
    scale = 2,
    code = `USD${newKey()}`.slice(0, 60),
  ): Promise<string> {
    const reply = await t.admin.post('/v1/asset-types', { code, kind: 'fiat', scale });
    if (reply.status !== 201)
      throw new Error(`asset type: ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply.body.asset_type_id as string;
  }

  async account(
    t: Pick<TenantClients, 'admin'>,
    assetTypeId: string,
    extra: Record<string, unknown> = {},
  ): Promise<string> {
    const reply = await t.admin.post('/v1/accounts', {
      asset_type_id: assetTypeId,
      name: 'acct',
      normal_side: 'debit',
      ...extra,
    });
    if (reply.status !== 201)
      throw new Error(`account: ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply.body.account_id as string;
  }
}

/** ledger_postings_total of a ledger service's /metrics, by path and outcome (0 when not seen yet). */
export async function postingCounts(url: string) {
  const value = await scrapeMetrics(url);
  const count = (path: string, outcome: string) =>
    value('ledger_postings_total', { path, outcome });
  return {
    generalCreated: count('general', 'created'),
    oneStatementCreated: count('one_statement', 'created'),
    oneStatementHandedBack: count('one_statement', 'handed_back'),
    oneStatementRefused: count('one_statement', 'refused'),
  };
}

/** The posting batchers' histograms on /metrics, per path: calls, postings in them, waits and flights observed. */
export async function postingBatchFlights(url: string) {
  const value = await scrapeMetrics(url);
  const of = (path: string) => ({
    calls: value('ledger_posting_batch_size_count', { path }),
    postings: value('ledger_posting_batch_size_sum', { path }),
    waits: value('ledger_posting_batch_wait_seconds_count', { path }),
    flights: value('ledger_posting_batch_flight_seconds_count', { path }),
    flightSeconds: value('ledger_posting_batch_flight_seconds_sum', { path }),
  });
  return { oneStatement: of('one_statement'), general: of('general') };
}

/** A 2-leg transfer body: debit `to`, credit `from` (both debit-normal: money moves from → to). */
export const transfer = (
  from: string,
  to: string,
  amount: string,
  extra: Record<string, unknown> = {},
) => ({
  entries: [
    { account_id: to, direction: 'debit', amount },
    { account_id: from, direction: 'credit', amount },
  ],
  ...extra,
});

/**
 * Async accounts of a tenant whose balance row plus queued deltas differs from the journal
 * (committed and pending legs). Read in one statement, so it holds at any instant, even while
 * postings and rollups run: a delta lost or applied twice shows up here.
 */
export async function asyncDrift(pool: DatabasePool, tenantId: string): Promise<string[]> {
  return (await withSystem(pool, (tx) =>
    tx.anyFirst(sql.unsafe`
      SELECT b.account_id FROM ledger.balances b JOIN ledger.accounts a USING (account_id)
      CROSS JOIN LATERAL (
        SELECT coalesce(sum(d.posted_debits), 0) AS pd, coalesce(sum(d.posted_credits), 0) AS pc,
               coalesce(sum(d.pending_debits), 0) AS hd, coalesce(sum(d.pending_credits), 0) AS hc
        FROM ledger.async_balance_deltas d WHERE d.account_id = b.account_id) q
      CROSS JOIN LATERAL (
        SELECT coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'committed' AND e.direction = 'debit'), 0) AS pd,
               coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'committed' AND e.direction = 'credit'), 0) AS pc,
               coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'pending' AND e.direction = 'debit'), 0) AS hd,
               coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'pending' AND e.direction = 'credit'), 0) AS hc
        FROM ledger.entries e JOIN ledger.transactions t USING (transaction_id) WHERE e.account_id = b.account_id) s
      WHERE a.tenant_id = ${tenantId} AND a.balance_tracking = 'async'
        AND (b.posted_debits + q.pd, b.posted_credits + q.pc, b.pending_debits + q.hd, b.pending_credits + q.hc)
            IS DISTINCT FROM (s.pd, s.pc, s.hd, s.hc)`),
  )) as string[];
}

/** Queued deltas of a tenant's async accounts (in flight in another consumer: still counted). */
export async function queuedDeltas(pool: DatabasePool, tenantId: string): Promise<number> {
  return Number(
    await withSystem(pool, (tx) =>
      tx.oneFirst(
        sql.unsafe`SELECT count(*) FROM ledger.async_balance_deltas WHERE tenant_id = ${tenantId}`,
      ),
    ),
  );
}

/**
 * Rolls up until none of the tenant's deltas is queued. Other consumers (every ledger API
 * process, other test files' services) take batches too; a delta is gone from the queue only
 * once the transaction that applied it has committed, so an empty queue means all applied.
 */
export async function drainTenant(pool: DatabasePool, tenantId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while ((await queuedDeltas(pool, tenantId)) > 0) {
    if (Date.now() > deadline) throw new Error('async deltas still queued after 30 s');
    await drainAsyncBalances(pool, 1_000);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A posting as the API hands it to the database (db/ledger/transactions.ts), fresh ids. */
export const postingCall = (
  tenantId: string,
  entries: { accountId: string; direction: 'debit' | 'credit'; amount: string }[],
  extra: Partial<PostingCall> = {},
): PostingCall => ({
  tenantId,
  lockTimeout: `${LOCK_TIMEOUT_MS}ms`,
  transactionId: uuidv7(),
  pending: false,
  description: null,
  externalId: null,
  metadata: {},
  effectiveAt: null,
  expiresAt: null,
  entries: entries.map((e) => ({ entryId: uuidv7(), ...e })),
  ...extra,
});
