import { ulid } from 'ulid';
import { loadConfig } from '../../../platform/config';
import { createDatabasePool, type DatabasePool } from '../../../db/pool';
import { runAdmin } from '../../../cli/runs';
import { eventually, startTestService, type TestService } from '../../support/services';
import { createDocker } from '../../../platform/docker';
import { OWNER_LABEL } from '../../../activities/docker/containers';
import type { Client } from '@temporalio/client';
import { taskQueues } from '../../../contracts/shared/task-queues';
import { executionSearchAttributes } from '../../../contracts/shared/search-attributes';
import type { ReconcileInput, runsReconcileWorkflow } from '../../../workflows/runs/reconcile';

export const config = loadConfig();
export const IMAGE = `${config.registryAddress}/busybox:latest`;
export const ALL_RUN_PERMISSIONS =
  'svc_run_submit,svc_run_read,svc_run_control,svc_run_delete,svc_tenant_admin';

export interface Harness {
  service: TestService;
  pool: DatabasePool;
  close(): Promise<void>;
}

export async function startHarness(overrides: NodeJS.ProcessEnv = {}): Promise<Harness> {
  // The retention schedule is made only by the test that exercises it (and deletes it after).
  const service = await startTestService('runs', {
    RUNS_RETENTION_SCHEDULE: 'false',
    ...overrides,
  });
  const pool = await createDatabasePool(config, {
    applicationName: 'runs-test',
    maximumPoolSize: 3,
  });
  return {
    service,
    pool,
    close: async () => {
      await service.close();
      await pool.end();
    },
  };
}

/** A fresh tenant with one key (all run permissions unless told), via the operator CLI's logic. */
export async function newTenant(
  pool: DatabasePool,
  options: { permissions?: string; tier?: string } = {},
): Promise<{ tenantId: string; key: string; keyId: string }> {
  const tenantId = `t-${ulid().toLowerCase()}`;
  await runAdmin(['tenant', 'create', tenantId], pool);
  const args = [
    'key',
    'create',
    '--tenant',
    tenantId,
    '--permissions',
    options.permissions ?? ALL_RUN_PERMISSIONS,
  ];
  if (options.tier) args.push('--tier', options.tier);
  const { json } = await runAdmin(args, pool);
  const out = json as { key: string; key_id: string };
  return { tenantId, key: out.key, keyId: out.key_id };
}

export interface Reply<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
}

export function client(baseUrl: string, key: string | null) {
  const call = async <T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<Reply<T>> => {
    const headers: Record<string, string> = {};
    if (key !== null) headers.authorization = `Bearer ${key}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return {
      status: response.status,
      body: (text === '' ? null : JSON.parse(text)) as T,
      headers: response.headers,
    };
  };
  return {
    call,
    submit: (body: Record<string, unknown>) =>
      call<{ track_id: string; status: string; eligible_start: string; clamped: boolean }>(
        'POST',
        '/api/v1/runs',
        body,
      ),
    status: (trackId: string) =>
      call<Record<string, unknown> & { state: string; events: Record<string, unknown>[] }>(
        'GET',
        `/api/v1/runs/${trackId}`,
      ),
    waitFor: (trackId: string, states: string[], timeoutMs = 60_000) =>
      eventually(
        async () => {
          const reply = await call<
            Record<string, unknown> & { state: string; events: Record<string, unknown>[] }
          >('GET', `/api/v1/runs/${trackId}`);
          return states.includes(reply.body.state) ? reply.body : undefined;
        },
        timeoutMs,
        100,
      ),
  };
}

/**
 * How many containers Docker created for a run since `sinceSeconds` (Unix), from the engine's
 * own event log: proof that a retry, a reset or a restart never made a second one.
 */
export async function containersCreated(trackId: string, sinceSeconds: number): Promise<number> {
  const stream = await createDocker(config).getEvents({
    since: sinceSeconds,
    until: Math.ceil(Date.now() / 1000),
    filters: { type: ['container'], event: ['create'], label: [`${OWNER_LABEL}=run/${trackId}`] },
  });
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text.split('\n').filter((line) => line.trim() !== '').length;
}

/**
 * One reconcile pass, as the schedule starts it, on the runs queue of the deployment under
 * `taskQueuePrefix`, carried to its end: its workflow id and its result.
 */
export async function reconcilePass(
  temporal: Client,
  taskQueuePrefix: string,
  input: ReconcileInput,
) {
  const workflowId = `${taskQueuePrefix}runs-reconcile-test-${ulid()}`;
  const result = await temporal.workflow.execute<typeof runsReconcileWorkflow>(
    'runsReconcileWorkflow',
    {
      workflowId,
      taskQueue: taskQueues(taskQueuePrefix).runs,
      args: [input],
      typedSearchAttributes: executionSearchAttributes('platform', 'runs'),
    },
  );
  return { workflowId, result };
}

/** A quota ledger entry of a metered run (GET /v1/ledger of the quota service). */
export interface QuotaLedgerEntry {
  entry_type: string;
  amount: number;
  idempotency_key: string | null;
  reservation_id: string | null;
  subject: string;
  metadata: Record<string, unknown> | null;
}

/**
 * What the quota service the run meters through (QUOTA_URL, set by the global setup) keeps of a
 * metered key, read with the runs service's own key: its ledger entries and its day's usage.
 */
export function quotaRecords(key: { tenantId: string; keyId: string }) {
  const subject = `runs:${key.tenantId}:${key.keyId}`;
  const get = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${process.env.QUOTA_URL}${path}`, {
      headers: { authorization: `Bearer ${process.env.RUNS_QUOTA_KEY}` },
    });
    if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  return {
    subject,
    ledger: async (): Promise<QuotaLedgerEntry[]> =>
      (
        await get<{ entries: QuotaLedgerEntry[] }>(
          `/v1/ledger?subject=${encodeURIComponent(subject)}&limit=500`,
        )
      ).entries,
    /** The run seconds the key's day holds (reserved, or used by ended runs). */
    usedToday: async (): Promise<number> => {
      const usage = await get<{ usage: { resource: string; used: number }[] }>(
        `/v1/subjects/${encodeURIComponent(subject)}/usage`,
      );
      return usage.usage.find((u) => u.resource === 'runs-seconds')?.used ?? 0;
    },
  };
}
