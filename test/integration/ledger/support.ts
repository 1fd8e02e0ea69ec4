/* eslint-disable @typescript-eslint/no-explicit-any -- JSON replies in tests */
import { v7 as uuidv7 } from 'uuid';
import { loadConfig } from '../../../api/platform/config';
import { createDatabasePool, type DatabasePool } from '../../../db/pool';
import { withSystem } from '../../../db/ledger/context';
import { insertTenant, type LedgerRole } from '../../../db/ledger/tenants';
import { issueKey } from '../../../api/ledger/credentials';
import { startTestService, type TestService } from '../../support/services';

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
    // The sweep schedule is made only by the test that asserts it (and deletes it after).
    // Tests share 127.0.0.1: the edge is widened except where a test asserts its defaults.
    this.service = await startTestService('ledger', {
      LEDGER_HOLD_SWEEP_SCHEDULE: 'false',
      LEDGER_EDGE_RATE_PER_SECOND: '100000',
      LEDGER_EDGE_BURST: '100000',
      ...overrides,
    });
    this.pool = await createDatabasePool(loadConfig(), {
      applicationName: 'ledger-test',
      maximumPoolSize: 4,
    });
    return this;
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
    t: TenantClients,
    scale = 2,
    code = `USD${newKey()}`.slice(0, 60),
  ): Promise<string> {
    const reply = await t.admin.post('/v1/asset-types', { code, kind: 'fiat', scale });
    if (reply.status !== 201)
      throw new Error(`asset type: ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply.body.asset_type_id as string;
  }

  async account(
    t: TenantClients,
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
