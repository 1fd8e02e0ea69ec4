/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument -- JSON replies in tests */
import { loadConfig } from '../../../platform/config';
import { createDatabasePool, type DatabasePool } from '../../../db/pool';
import { closeRedis, createRedis, type Redis } from '../../../db/redis';
import { runAdmin } from '../../../cli/quota';
import {
  RUN_RETRY_DELAYS,
  eventually,
  startTestService,
  type TestService,
} from '../../support/services';

export const config = loadConfig();

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export type QuotaClient = ReturnType<typeof client>;

/** A JSON client of the quota API with one bearer key (null: none). */
export function client(baseUrl: string, key: string | null) {
  const call = async <T = any>(method: string, path: string, body?: unknown): Promise<Reply<T>> => {
    const headers: Record<string, string> = {};
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    const json = response.headers.get('content-type')?.includes('json');
    return {
      status: response.status,
      body: (text === '' ? null : json ? JSON.parse(text) : text) as T,
      headers: response.headers,
    };
  };
  return {
    call,
    get: <T = any>(path: string) => call<T>('GET', path),
    post: <T = any>(path: string, body?: unknown) => call<T>('POST', path, body ?? {}),
    put: <T = any>(path: string, body: unknown) => call<T>('PUT', path, body),
    patch: <T = any>(path: string, body: unknown) => call<T>('PATCH', path, body),
    delete: <T = any>(path: string) => call<T>('DELETE', path),
  };
}

export interface QuotaHarness {
  service: TestService;
  /** This run's (the ledger flush starts an alert's deliveries on its quota queue). */
  taskQueuePrefix: string;
  pool: DatabasePool;
  redis: Redis;
  operator: QuotaClient;
  operatorKey: string;
  operatorActor: string;
  /** A new tenant whose grants are written, with a client of its first key (every tenant scope). */
  newTenant(name?: string): Promise<{
    id: string;
    admin: QuotaClient;
    adminKey: { id: string; key: string; actor: string };
  }>;
  as(key: string | null): QuotaClient;
  close(): Promise<void>;
}

export async function startQuota(overrides: NodeJS.ProcessEnv = {}): Promise<QuotaHarness> {
  const service = await startTestService('quota', { ...RUN_RETRY_DELAYS, ...overrides });
  const pool = await createDatabasePool(config, {
    applicationName: 'quota-test',
    maximumPoolSize: 3,
  });
  const redis = createRedis(config, 'quota:');
  const operatorActor = `ops-${process.pid}@example.test`;
  const { json } = await runAdmin(['operator-key', 'create', '--actor', operatorActor], {
    config,
    pool,
    redis,
  });
  const as = (key: string | null) => client(service.url, key);
  const operatorKey = (json as { key: string }).key;
  const operator = as(operatorKey);
  let tenants = 0;
  return {
    service,
    taskQueuePrefix: config.taskQueuePrefix,
    pool,
    redis,
    operator,
    operatorKey,
    operatorActor,
    as,
    async newTenant(name = `tenant ${process.pid}-${++tenants}`) {
      const created = await operator.post('/v1/tenants', { name });
      if (created.status !== 201)
        throw new Error(`tenant not created: ${JSON.stringify(created.body)}`);
      const admin = as(created.body.admin_key.key);
      await eventually(
        async () => ((await admin.get('/v1/tenant')).status === 200 ? true : undefined),
        30_000,
      );
      return { id: created.body.id, admin, adminKey: created.body.admin_key };
    },
    close: async () => {
      await service.close();
      await pool.end();
      await closeRedis(redis);
    },
  };
}

/**
 * A subject on a plan of its own: a resource named `name`, one quota policy per window given
 * (`<name>-<unit>`, in `mode`), the plan assigned to `subject` (default `name`).
 */
export async function subjectOnPlan(
  admin: QuotaClient,
  name: string,
  options: {
    limits: Partial<Record<'day' | 'month', number>>;
    mode: 'strict' | 'fast';
    subject?: string;
  },
) {
  const resource = (await admin.post('/v1/resources', { name })).body;
  const policies: Record<string, any> = {};
  for (const [unit, limit] of Object.entries(options.limits))
    policies[unit] = (
      await admin.post('/v1/policies', {
        name: `${name}-${unit}`,
        resource_id: resource.id,
        kind: 'quota',
        limit_amount: limit,
        window_kind: 'fixed',
        window_unit: unit,
        enforcement_mode: options.mode,
      })
    ).body;
  const plan = (
    await admin.post('/v1/plans', {
      name,
      policy_ids: Object.values(policies).map((p: { id: string }) => p.id),
    })
  ).body;
  const subject = options.subject ?? name;
  const assigned = await admin.put(`/v1/subjects/${subject}/assignment`, { plan_id: plan.id });
  if (assigned.status !== 200) throw new Error(`not assigned: ${JSON.stringify(assigned.body)}`);
  return { resource, policies, plan, subject };
}
