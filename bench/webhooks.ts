/**
 * Webhook delivery figures of the runs service (npm run bench:webhooks), against the local stack:
 *  1. the receiver's own rate: a plain HTTPS load generator (16 requests in flight, a fresh TLS
 *     connection each, as a delivery makes) POSTing an envelope-sized body to a local HTTPS
 *     receiver — the baseline, measured in the same run on the same cores;
 *  2. deliveries/s through the whole engine to the same receiver: DELIVERIES test deliveries
 *     (POST /webhooks/{id}/test), each a row, a publisher-free start through the delivery outbox,
 *     a Temporal workflow and a signed attempt; from the first row's creation to the last 2xx;
 *  3. the enqueue-to-first-attempt latency p50/p99 of those deliveries (row created → attempt 1
 *     started, from webhook_attempts);
 * and the ratio of (2) to (1). It starts its own worker process and API in the tests' Temporal
 * namespace on task queues of its own, so it never disturbs a running stack or test.
 */
import https from 'node:https';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ulid } from 'ulid';
import { percentile } from './lib/http-load';
import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';
import { createDatabasePool, sql } from '../db/pool';
import { migrateAll } from '../db/migrate';
import { loadStackEnv } from '../test/support/stack-env';
import { testNamespace } from '../test/support/test-namespace';
import { startWorkerProcess } from '../test/support/worker-process';
import { startHttpsReceiver } from '../test/support/https-receiver';
import { ensureWebhookTestCertificates, webhookTestEnv } from '../test/support/webhook-test-env';
import { startTestService } from '../test/support/services';
import { benchRunsTenant } from './lib/runs-tenant';

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 300);
const BASELINE_REQUESTS = Number(process.env.BENCH_BASELINE_REQUESTS ?? 1000);
const BASELINE_IN_FLIGHT = 16;

async function main(): Promise<void> {
  loadStackEnv();
  await ensureWebhookTestCertificates();
  const id = `bench-${ulid().toLowerCase().slice(-8)}`;
  const env = {
    ...webhookTestEnv(),
    TEMPORAL_NAMESPACE: testNamespace(),
    TASK_QUEUE_PREFIX: `${id}-`,
    WORKER_ID: id,
    RUNS_RATE_LIMIT_REQUESTS: '1000000',
    RUNS_RETENTION_SCHEDULE: 'false',
    LOG_LEVEL: 'warn',
  };
  Object.assign(process.env, env);
  const config = loadConfig();
  await migrateAll(config.databaseUrl, createLogger('warn'));
  const pool = await createDatabasePool(config, { applicationName: 'bench-webhooks' });
  const logFile = path.resolve('.data', 'logs', `${id}-worker.log`);
  const worker = await startWorkerProcess(env, logFile, { detached: true });
  const receiver = await startHttpsReceiver();
  const api = await startTestService('runs', env);
  try {
    console.log(
      `webhooks bench (${id}; ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)})`,
    );
    const baseline = await receiverRate(receiver.url, webhookTestEnv().WEBHOOK_CA_FILE);
    console.log(
      `receiver alone       ${baseline.toFixed(0)} requests/s (${BASELINE_REQUESTS} POSTs, ${BASELINE_IN_FLIGHT} in flight, a TLS connection each)`,
    );
    receiver.requests.length = 0;

    const { key } = await benchRunsTenant(pool, ['svc_webhook_admin', 'svc_webhook_read']);
    const headers = {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
    };
    const created = await fetch(`${api.url}/api/v1/webhooks`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ url: `${receiver.url}/hook`, events: ['run.terminal'] }),
    });
    const { endpoint_id: endpointId } = (await created.json()) as { endpoint_id: string };
    await Promise.all(
      Array.from({ length: DELIVERIES }, () =>
        fetch(`${api.url}/api/v1/webhooks/${endpointId}/test`, { method: 'POST', headers }),
      ),
    );
    await receiver.waitForRequests(DELIVERIES, 600_000);
    const figures = (await pool.one(sql.unsafe`
      SELECT count(*) FILTER (WHERE d.state = 'delivered')::int AS delivered,
             extract(epoch FROM max(d.finished_at) - min(d.created_at))::float8 AS seconds,
             array_agg(extract(epoch FROM a.started_at - d.created_at)::float8) AS waits
      FROM runs.webhook_deliveries d
      JOIN runs.webhook_attempts a ON a.delivery_id = d.delivery_id AND a.attempt = 1
      WHERE d.endpoint_id = ${endpointId}`)) as {
      delivered: number;
      seconds: number;
      waits: number[];
    };
    const rate = figures.delivered / figures.seconds;
    const ms = (p: number) => (percentile(figures.waits, p) * 1000).toFixed(0);
    console.log(
      `deliveries/s         ${rate.toFixed(1)} (${figures.delivered}/${DELIVERIES} delivered in ${figures.seconds.toFixed(2)} s); ratio to the receiver alone ${(rate / baseline).toFixed(3)}`,
    );
    console.log(`enqueue → attempt 1  p50 ${ms(50)} ms  p99 ${ms(99)} ms`);
  } finally {
    await api.close();
    await receiver.close();
    if (worker.exitCode === null) process.kill(-worker.pid!, 'SIGTERM');
    await pool.end();
  }
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
