/**
 * Webhook delivery figures of the runs service (npm run bench:webhooks), against the local stack:
 *  1. the receiver's own rate: a plain HTTPS load generator (16 requests in flight, a fresh TLS
 *     connection each, as a delivery makes) POSTing an envelope-sized body to a local HTTPS
 *     receiver — the baseline, measured in the same run on the same cores;
 *  2. deliveries/s through the whole engine to the same receiver: a burst of DELIVERIES events
 *     committed at once (timer.fired notices, as timers firing together write them) to ENDPOINTS
 *     endpoints (one per tenant), each published, made a delivery and attempted, signed; from the
 *     events' commit to the last 2xx; its ratio to (1), and the CPU per delivery of each process
 *     (API, worker, Temporal server, Postgres);
 *  3. event committed → first attempt started, p50/p99 (webhook_attempts): in the burst, and for
 *     ALONE_EVENTS events committed one at a time with nothing else running;
 *  4. per-endpoint order: first attempts that reached their endpoint before one made earlier;
 *  5. how many deliveries needed a workflow, and its history (events, bytes): what a Temporal
 *     cluster stores for them.
 * It starts its own worker and API processes in the tests' Temporal namespace on task queues of
 * its own, so it never disturbs a running stack or test.
 */
import https from 'node:https';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ulid } from 'ulid';
import { percentile } from './lib/http-load';
import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';
import { createTemporalClient } from '../platform/temporal';
import { createDatabasePool, sql, type DatabasePool } from '../db/pool';
import { migrateAll } from '../db/migrate';
import { deliveryWorkflowId } from '../contracts/shared/delivery';
import { loadStackEnv } from '../test/support/stack-env';
import { testNamespace } from '../test/support/test-namespace';
import { startWorkerProcess } from '../test/support/worker-process';
import { freePort, startApiProcess, stopProcessGroup } from '../test/support/api-process';
import { startHttpsReceiver, type ReceivedRequest } from '../test/support/https-receiver';
import { ensureWebhookTestCertificates, webhookTestEnv } from '../test/support/webhook-test-env';
import { benchRunsTenant } from './lib/runs-tenant';
import { cpuPerUnit } from './lib/cpu-per-unit';
import { stackCpuReaders, cpuLine } from './lib/stack-cpu';
import { historyLine, meanHistory } from './lib/histories';

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 1000);
const ENDPOINTS = Number(process.env.BENCH_ENDPOINTS ?? 10);
const BASELINE_REQUESTS = Number(process.env.BENCH_BASELINE_REQUESTS ?? 1000);
const BASELINE_IN_FLIGHT = 16;
/** Events committed one at a time for the latency of a delivery when nothing else runs. */
const ALONE_EVENTS = Number(process.env.BENCH_ALONE_EVENTS ?? 50);
/** Delivery histories read for their size. */

async function main(): Promise<void> {
  loadStackEnv();
  await ensureWebhookTestCertificates();
  const id = `bench-${ulid().toLowerCase().slice(-8)}`;
  const port = await freePort();
  const env = {
    ...webhookTestEnv(),
    TEMPORAL_NAMESPACE: testNamespace(),
    TASK_QUEUE_PREFIX: `${id}-`,
    WORKER_ID: id,
    RUNS_PORT: String(port),
    RUNS_RATE_LIMIT_REQUESTS: '1000000',
    RUNS_RETENTION_SCHEDULE: 'false',
    LOG_LEVEL: 'warn',
  };
  Object.assign(process.env, env);
  const config = loadConfig();
  await migrateAll(config.databaseUrl, createLogger('warn'));
  const pool = await createDatabasePool(config, { applicationName: 'bench-webhooks' });
  const logs = path.resolve('.data', 'logs');
  const worker = await startWorkerProcess(env, path.join(logs, `${id}-worker.log`), {
    detached: true,
  });
  const receiver = await startHttpsReceiver();
  const apiUrl = `http://127.0.0.1:${port}`;
  const api = await startApiProcess({
    services: ['runs'],
    env: { ...process.env, ...env },
    logFile: path.join(logs, `${id}-api.log`),
    readyUrls: [`${apiUrl}/ping`],
  });
  const client = createTemporalClient(config);
  try {
    console.log(
      `webhooks bench (${id}; ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)})`,
    );
    const baseline = await receiverRate(receiver.url, webhookTestEnv().WEBHOOK_CA_FILE);
    console.log(
      `receiver alone       ${baseline.toFixed(0)} requests/s (${BASELINE_REQUESTS} POSTs, ${BASELINE_IN_FLIGHT} in flight, a TLS connection each)`,
    );
    receiver.requests.length = 0;

    // One endpoint per tenant, each subscribed to timer.fired: a notice reaches its tenant's one.
    const endpoints: string[] = [];
    const tenants: string[] = [];
    for (let i = 0; i < ENDPOINTS; i++) {
      const { key, tenantId } = await benchRunsTenant(pool, ['svc_webhook_admin']);
      const made = await fetch(`${apiUrl}/api/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `${receiver.url}/hook-${i}`, events: ['timer.fired'] }),
      });
      endpoints.push(((await made.json()) as { endpoint_id: string }).endpoint_id);
      tenants.push(tenantId);
    }
    const queue = `${id}-runs`;
    const { cpuUs } = await cpuPerUnit(
      await stackCpuReaders(pool, { api: api.pid!, worker: worker.pid! }),
      async () => {
        await commitEvents(pool, queue, tenants, DELIVERIES);
        await receiver.waitForRequestsTo('/hook-', DELIVERIES, 600_000);
      },
      () => DELIVERIES,
    );
    const figures = await burstFigures(pool, endpoints);
    const rate = figures.delivered / figures.seconds;
    const ms = (waits: number[], p: number) => (percentile(waits, p) * 1000).toFixed(0);
    console.log(
      `deliveries/s         ${rate.toFixed(1)} (${figures.delivered}/${DELIVERIES} delivered to ${ENDPOINTS} endpoints in ${figures.seconds.toFixed(2)} s, from the events' commit); ratio to the receiver alone ${(rate / baseline).toFixed(3)}`,
    );
    console.log(
      `event → attempt 1    p50 ${ms(figures.waits, 50)} ms  p99 ${ms(figures.waits, 99)} ms (the burst)`,
    );
    console.log(
      `per-endpoint order   ${outOfOrder(receiver.requests)} of ${DELIVERIES} first attempts reached their endpoint after a later delivery's`,
    );
    const alone: number[] = [];
    for (let i = 0; i < ALONE_EVENTS; i++) {
      const [event] = await commitEvents(pool, queue, [tenants[0]!], 1);
      alone.push(await firstAttemptWait(pool, event!));
    }
    console.log(
      `event → attempt 1    p50 ${ms(alone, 50)} ms  p99 ${ms(alone, 99)} ms (${ALONE_EVENTS} events one at a time, nothing else running)`,
    );
    console.log(`CPU µs per delivery  ${cpuLine(cpuUs)}`);
    const history = await meanHistory(client, await deliveryWorkflows(pool, endpoints));
    console.log(
      `workflows            ${history.count} of ${DELIVERIES} deliveries needed one; a history ${historyLine(history)} (mean of a sample)`,
    );
  } finally {
    await client.connection.close();
    await stopProcessGroup(api);
    await receiver.close();
    if (worker.exitCode === null) process.kill(-worker.pid!, 'SIGTERM');
    await pool.end();
  }
}

/**
 * Timer-fired notices committed at once, as many timers firing together would: `count` events
 * spread over the tenants (one endpoint each), published by the bench's own deployment.
 */
async function commitEvents(
  pool: DatabasePool,
  queue: string,
  tenants: string[],
  count: number,
): Promise<string[]> {
  const ids = Array.from({ length: count }, () => ulid());
  await pool.query(sql.unsafe`
    INSERT INTO runs.webhook_notices (event_id, tenant_id, event_type, resource_type, resource_id,
                                      data, workflow_task_queue)
    SELECT id, tenant, 'timer.fired', 'timer', id,
           jsonb_build_object('timer_id', id, 'labels', '{}'::jsonb, 'payload', NULL), ${queue}
    FROM unnest(${sql.array(ids, 'text')}::text[],
                ${sql.array(
                  ids.map((_, i) => tenants[i % tenants.length]!),
                  'text',
                )}::text[]) AS e(id, tenant)`);
  return ids;
}

/** The burst as the rows tell it: delivered, the events' commit to the last end, each wait. */
async function burstFigures(pool: DatabasePool, endpoints: string[]) {
  return (await pool.one(sql.unsafe`
    SELECT count(*) FILTER (WHERE d.state = 'delivered')::int AS delivered,
           extract(epoch FROM max(d.finished_at) - min(n.created_at))::float8 AS seconds,
           array_agg(extract(epoch FROM a.started_at - n.created_at)::float8) AS waits
    FROM runs.webhook_deliveries d
    JOIN runs.webhook_notices n USING (event_id)
    JOIN runs.webhook_attempts a ON a.delivery_id = d.delivery_id AND a.attempt = 1
    WHERE d.endpoint_id = ANY(${sql.array(endpoints, 'text')})`)) as {
    delivered: number;
    seconds: number;
    waits: number[];
  };
}

/** Event committed → its delivery's first attempt started (seconds), once it is recorded. */
async function firstAttemptWait(pool: DatabasePool, eventId: string): Promise<number> {
  for (;;) {
    const wait = (await pool.maybeOneFirst(sql.unsafe`
      SELECT extract(epoch FROM a.started_at - n.created_at)::float8
      FROM runs.webhook_notices n
      JOIN runs.webhook_deliveries d USING (event_id)
      JOIN runs.webhook_attempts a ON a.delivery_id = d.delivery_id AND a.attempt = 1
      WHERE n.event_id = ${eventId}`)) as number | null;
    if (wait !== null) return wait;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** First attempts that arrived after a later delivery to the same endpoint had arrived. */
function outOfOrder(requests: ReceivedRequest[]): number {
  const latest = new Map<string, number>();
  let late = 0;
  for (const request of requests) {
    if (request.headers['x-svc-attempt'] !== '1') continue;
    const delivery = Number(request.headers['x-svc-delivery']);
    if (delivery < (latest.get(request.path) ?? -1)) late++;
    else latest.set(request.path, delivery);
  }
  return late;
}

/** The deliveries that needed a workflow (a retry, or a first attempt their process died in). */
async function deliveryWorkflows(pool: DatabasePool, endpoints: string[]): Promise<string[]> {
  const started = (await pool.anyFirst(sql.unsafe`
    SELECT delivery_id::text FROM runs.webhook_deliveries
    WHERE endpoint_id = ANY(${sql.array(endpoints, 'text')}) AND workflow_started
    ORDER BY delivery_id`)) as string[];
  return started.map((deliveryId) => deliveryWorkflowId('runs', deliveryId));
}

/** Requests/s the receiver answers on its own: a plain client, BASELINE_IN_FLIGHT at a time. */
async function receiverRate(url: string, caFile: string): Promise<number> {
  const ca = [fs.readFileSync(caFile, 'utf8')];
  const body = JSON.stringify({ padding: 'x'.repeat(1500) });
  const post = () =>
    new Promise<void>((resolve, reject) => {
      const request = https.request(
        `${url}/baseline`,
        { method: 'POST', ca, agent: false, headers: { 'content-type': 'application/json' } },
        (response) => {
          response.resume();
          response.on('end', resolve);
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  let sent = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: BASELINE_IN_FLIGHT }, async () => {
      while (sent < BASELINE_REQUESTS) {
        sent++;
        await post();
      }
    }),
  );
  return BASELINE_REQUESTS / ((Date.now() - started) / 1000);
}

main().catch((error: unknown) => {
  console.error('bench failed:', error);
  process.exit(1);
});
