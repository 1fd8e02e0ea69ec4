/**
 * Load figures of the runs service (npm run bench:runs), against the local stack:
 *  1. submit-to-running latency (p50/p99) of a trivial container, image already in the registry;
 *  2. sustained completed runs per second for a trivial container;
 *  3. the submit endpoint's p99 at 100 submits/s (runs deferred and left to expire, so this
 *     measures the API, not Docker);
 * and checks that no run was lost or duplicated. It starts its own worker process and API on
 * task queues of its own, so it never disturbs a running stack or test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { ulid } from 'ulid';
import { loadConfig } from '../api/platform/config';
import { createLogger } from '../api/platform/logger';
import { runAdmin } from '../api/runs/cli';
import { createDatabasePool, sql } from '../db/pool';
import { migrateAll } from '../db/migrate';
import { loadStackEnv } from '../test/support/stack-env';
import { WORKER_READY_TIMEOUT_MS, startWorkerProcess } from '../test/support/worker-process';

const LATENCY_RUNS = Number(process.env.BENCH_LATENCY_RUNS ?? 40);
const THROUGHPUT_RUNS = Number(process.env.BENCH_THROUGHPUT_RUNS ?? 150);
const SUBMIT_RATE_PER_SECOND = Number(process.env.BENCH_SUBMIT_RATE ?? 100);
const SUBMIT_DURATION_SECONDS = Number(process.env.BENCH_SUBMIT_SECONDS ?? 10);
const CONCURRENT_RUNS = Number(process.env.BENCH_CONCURRENT_RUNS ?? 20);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

/** The runs API in its own process, so the load generator does not share its event loop. */
async function startApi(
  env: NodeJS.ProcessEnv,
  logFile: string,
  port: number,
): Promise<ChildProcess> {
  const root = path.resolve(__dirname, '..');
  const log = fs.openSync(logFile, 'a');
  const api = spawn(path.join(root, 'node_modules', '.bin', 'tsx'), ['api/main.ts', 'runs'], {
    cwd: root,
    env: { ...process.env, ...env, RUNS_PORT: String(port) },
    stdio: ['ignore', log, log],
    detached: true,
  });
  const deadline = Date.now() + WORKER_READY_TIMEOUT_MS;
  for (;;) {
    const up = await fetch(`http://127.0.0.1:${port}/ping`).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return api;
    if (api.exitCode !== null || Date.now() > deadline)
      throw new Error(`runs API did not start; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  loadStackEnv();
  const id = `bench-${ulid().toLowerCase().slice(-8)}`;
  const env = {
    TASK_QUEUE_PREFIX: `${id}-`,
    WORKER_ID: id,
    RUNS_RATE_LIMIT_REQUESTS: '1000000',
    RUNS_RETENTION_SCHEDULE: 'false',
    LOG_LEVEL: 'warn',
  };
  Object.assign(process.env, env);
  const config = loadConfig();
  const logger = createLogger('warn');
  await migrateAll(config.databaseUrl, logger);
  const logFile = path.resolve('.data', 'logs', `${id}-worker.log`);
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const worker = await startWorkerProcess(env, logFile, { detached: true });
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const api = await startApi(env, path.resolve('.data', 'logs', `${id}-api.log`), port);
  const pool = await createDatabasePool(config, {
    applicationName: 'bench-runs',
    maximumPoolSize: 4,
  });
  const url = `http://127.0.0.1:${port}`;
  const image = `${config.registryAddress}/busybox:latest`;
  try {
    const tenantId = `bench-${ulid().toLowerCase()}`;
    await runAdmin(['tenant', 'create', tenantId], pool);
    const { json } = await runAdmin(
      [
        'key',
        'create',
        '--tenant',
        tenantId,
        '--permissions',
        'svc_run_submit,svc_run_read,svc_tenant_admin',
      ],
      pool,
    );
    const key = (json as { key: string }).key;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    await fetch(`${url}/api/v1/tenant/quotas`, {
      method: 'PUT',
      headers,
      body: JSON.stringify({ max_concurrent_runs: CONCURRENT_RUNS, max_daily_runs: 1_000_000 }),
    });
    const submit = async (body: unknown) => {
      const response = await fetch(`${url}/api/v1/runs`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
      });
      if (response.status !== 202)
        throw new Error(`submit answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { track_id: string }).track_id;
    };
    const waitTerminal = async (ids: string[], timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const open = (await pool.oneFirst(sql.unsafe`
          SELECT count(*)::int FROM runs.runs WHERE track_id = ANY(${sql.array(ids, 'text')}) AND finished_at IS NULL`)) as number;
        if (open === 0) return;
        if (Date.now() > deadline) throw new Error(`${open} runs still open after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 200));
      }
    };

    // Warm-up: the image is in the registry and pulled once.
    await waitTerminal([await submit({ image, command: ['true'] })], 60_000);

    // 1. Submit-to-running latency, one run at a time.
    const latencyIds: string[] = [];
    for (let i = 0; i < LATENCY_RUNS; i++) {
      const trackId = await submit({ image, command: ['true'] });
      latencyIds.push(trackId);
      await waitTerminal([trackId], 60_000);
    }
    const latencies = (await pool.anyFirst(sql.unsafe`
      SELECT extract(epoch FROM started_at - submitted_at)::float8 AS seconds FROM runs.runs
      WHERE track_id = ANY(${sql.array(latencyIds, 'text')})`)) as number[];

    // 2. Sustained completed runs per second.
    const batch = await Promise.all(
      Array.from({ length: THROUGHPUT_RUNS }, () => submit({ image, command: ['true'] })),
    );
    await waitTerminal(batch, 600_000);
    const window = (await pool.one(sql.unsafe`
      SELECT extract(epoch FROM max(finished_at) - min(submitted_at))::float8 AS seconds,
             count(*) FILTER (WHERE state = 'exited')::int AS exited
      FROM runs.runs WHERE track_id = ANY(${sql.array(batch, 'text')})`)) as {
      seconds: number;
      exited: number;
    };
    const perRun = (await pool.any(sql.unsafe`
      SELECT track_id, count(*) FILTER (WHERE to_state = 'running')::int AS running,
             count(*) FILTER (WHERE to_state IN ('exited', 'failed', 'timeout', 'killed'))::int AS terminal
      FROM runs.run_events WHERE track_id = ANY(${sql.array([...batch, ...latencyIds], 'text')}) GROUP BY track_id`)) as {
      running: number;
      terminal: number;
    }[];
    const duplicated = perRun.filter((r) => r.running !== 1 || r.terminal !== 1).length;
    const lost = batch.length + latencyIds.length - perRun.length;

    // 3. Submit p99 at a fixed rate (deferred runs that expire without a container).
    const expiresAt = new Date(Date.now() + (SUBMIT_DURATION_SECONDS + 20) * 1000).toISOString();
    const load = await autocannon({
      url: `${url}/api/v1/runs`,
      method: 'POST',
      headers,
      body: JSON.stringify({
        image,
        command: ['true'],
        scheduled_start: '2999-01-01T00:00:00Z',
        expires_at: expiresAt,
      }),
      connections: 10,
      overallRate: SUBMIT_RATE_PER_SECOND,
      duration: SUBMIT_DURATION_SECONDS,
    });
    const stored = (await pool.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM runs.runs WHERE tenant_id = ${tenantId} AND scheduled_start IS NOT NULL`)) as number;
    const accepted = load['2xx'];

    const seconds = (s: number) => `${s.toFixed(3)} s`;
    console.log(
      `runs bench (${id}; API and worker in their own processes, ${CONCURRENT_RUNS} slots, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)})`,
    );
    console.log(
      `submit-to-running   n=${latencies.length}  p50 ${seconds(percentile(latencies, 50))}  p99 ${seconds(percentile(latencies, 99))}  (bar: p50 ≤ 1.5 s, p99 ≤ 3 s)`,
    );
    console.log(
      `completed runs/s    ${(window.exited / window.seconds).toFixed(2)}  (${window.exited}/${THROUGHPUT_RUNS} exited in ${seconds(window.seconds)}; bar ≥ 5)`,
    );
    console.log(
      `submit under load   ${SUBMIT_RATE_PER_SECOND}/s for ${SUBMIT_DURATION_SECONDS} s: p50 ${load.latency.p50} ms  p99 ${load.latency.p99} ms  max ${load.latency.max} ms  (bar: p99 < 50 ms)  2xx ${accepted}  non-2xx ${load.non2xx}  errors ${load.errors}`,
    );
    console.log(
      `lost or duplicated  lost ${lost}, duplicated ${duplicated}, accepted-but-not-stored ${Math.max(0, accepted - stored)}`,
    );
    // Let the deferred runs expire while this bench's worker is still up, so none is left open.
    const deferred = (await pool.anyFirst(sql.unsafe`
      SELECT track_id FROM runs.runs WHERE tenant_id = ${tenantId} AND scheduled_start IS NOT NULL`)) as string[];
    await waitTerminal(deferred, 120_000);
    const expired = (await pool.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM runs.runs
      WHERE track_id = ANY(${sql.array(deferred, 'text')}) AND reason = 'expired' AND started_at IS NULL`)) as number;
    console.log(
      `deferred runs       ${expired}/${deferred.length} ended failed (expired), none dispatched`,
    );
  } finally {
    process.kill(-api.pid!, 'SIGTERM');
    await pool.end();
    process.kill(-worker.pid!, 'SIGTERM');
  }
}

main().catch((error: unknown) => {
  console.error('bench failed:', error);
  process.exit(1);
});
