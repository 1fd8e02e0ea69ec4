/**
 * Load figures of the runs service (npm run bench:runs), against the local stack:
 *  1. submit-to-running latency (p50/p99) of a trivial container, image already in the registry;
 *  2. sustained completed runs per second for a trivial container, against the Docker engine's
 *     own rate for the same containers at the same concurrency (create, start, wait, remove;
 *     the same run, the same cores), with the CPU per run of each process, the Postgres
 *     transactions per run and the Temporal history per run;
 *  3. the submit endpoint's p50/p99 at 100 submits/s sent evenly (open loop, bench/lib/http-load.ts;
 *     latency from each request's due instant), measured twice (runs deferred and left to
 *     expire, so no container runs either time):
 *     a. "endpoint": against a second API process whose Temporal address is unreachable, so
 *        the figure is what the request path costs (key + quotas, rate limit, validation, one
 *        insert statement) with the machine otherwise quiet. Its runs are started afterwards by
 *        the main API's sweeper, exactly as after a Temporal outage, and the bench prints how
 *        long the system took to start them all;
 *     b. "with the system accepting": against the main API, which starts each run's workflow
 *        right after its 202, so Temporal (server and worker) competes with the API for the
 *        two cores while the load runs. The workflow-start lag is printed too.
 *     On this machine the two differ by the CPU Temporal takes: the local dev server (SQLite)
 *     starts about 50 workflows/s, so 100 accepted runs/s is more than it can absorb and the
 *     starts back up (the runs are safe in Postgres meanwhile; see workflow-starter.ts);
 * and checks that no run was lost or duplicated;
 *  4. the DAG figures (bench/lib/dag-figure.ts): a 20-node fan-out/fan-in and a 20-node chain of
 *     trivial containers, each's makespan against the same containers in the same shape run
 *     directly on the Docker engine in the same run (a ratio), what the engine adds per node on
 *     the critical path, and the Temporal history per node. It starts its own worker process and APIs on
 * task queues of its own, in the tests' Temporal namespace (the operators' `default` shows only
 * real executions), so it never disturbs a running stack or test.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ulid } from 'ulid';
import { httpCall, openLoop, percentile } from './lib/http-load';
import { processCpuMs } from './lib/process-cpu';
import { chain, dagFigure, fanOutFanIn } from './lib/dag-figure';
import { directRate } from './lib/docker-direct';
import { cpuPerUnit } from './lib/cpu-per-unit';
import { cpuLine, stackCpuReaders } from './lib/stack-cpu';
import { historyLine, meanHistory } from './lib/histories';
import { createTemporalClient } from '../platform/temporal';
import { runWorkflowId } from '../contracts/runs/run';
import { createDocker } from '../platform/docker';
import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';
import { createDatabasePool, sql, type DatabasePool } from '../db/pool';
import { migrateAll } from '../db/migrate';
import { loadStackEnv } from '../test/support/stack-env';
import { testNamespace } from '../test/support/test-namespace';
import { WORKER_READY_TIMEOUT_MS, startWorkerProcess } from '../test/support/worker-process';
import { benchRunsTenant } from './lib/runs-tenant';
import { startApiProcess } from '../test/support/api-process';

const LATENCY_RUNS = Number(process.env.BENCH_LATENCY_RUNS ?? 40);
const THROUGHPUT_RUNS = Number(process.env.BENCH_THROUGHPUT_RUNS ?? 150);
const SUBMIT_RATE_PER_SECOND = Number(process.env.BENCH_SUBMIT_RATE ?? 100);
const SUBMIT_DURATION_SECONDS = Number(process.env.BENCH_SUBMIT_SECONDS ?? 10);
/** Submits at the same rate before each measured window, not counted in its figures. */
const SUBMIT_WARMUP_SECONDS = Number(process.env.BENCH_SUBMIT_WARMUP_SECONDS ?? 3);
const CONCURRENT_RUNS = Number(process.env.BENCH_CONCURRENT_RUNS ?? 20);
/** Which figures to measure (comma-separated: latency, throughput, submit, dag); all by default. */
const PHASES = new Set((process.env.BENCH_PHASES ?? 'latency,throughput,submit,dag').split(','));
/** The DAG figures: a fan-out of one root, this many nodes and one join; a chain this long. */
const DAG_WIDTH = 18;
const DAG_CHAIN = 20;
/** Extra node options of the API process, e.g. --cpu-prof --cpu-prof-dir=/tmp/prof. */
const API_NODE_OPTIONS = process.env.BENCH_API_NODE_OPTIONS ?? '';

/** The runs API in its own process, so the load generator does not share its event loop. */
const startApi = (env: NodeJS.ProcessEnv, logFile: string, port: number): Promise<ChildProcess> =>
  startApiProcess({
    services: ['runs'],
    env: { ...env, RUNS_PORT: String(port) },
    logFile,
    readyUrls: [`http://127.0.0.1:${port}/ping`],
    timeoutMs: WORKER_READY_TIMEOUT_MS,
    nodeArgs: API_NODE_OPTIONS.split(' ').filter((a) => a !== ''),
  });

async function main(): Promise<void> {
  loadStackEnv();
  const id = `bench-${ulid().toLowerCase().slice(-8)}`;
  const env = {
    TEMPORAL_NAMESPACE: testNamespace(),
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
  const pool = await createDatabasePool(config, {
    applicationName: 'bench-runs',
    maximumPoolSize: 4,
  });
  const worker = await startWorkerProcess(env, logFile, { detached: true });
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const apiLog = (name: string) => path.resolve('.data', 'logs', `${id}-${name}.log`);
  const children: ChildProcess[] = [worker];
  const stop = (child: ChildProcess) => {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
  };
  const image = `${config.registryAddress}/busybox:latest`;
  const docker = createDocker(config);
  const temporal = createTemporalClient(config);
  const seconds = (s: number) => `${s.toFixed(3)} s`;
  const load1 = () => os.loadavg()[0]!.toFixed(1);
  try {
    const { tenantId, key } = await benchRunsTenant(pool, [
      'svc_run_submit',
      'svc_run_read',
      'svc_tenant_admin',
      'svc_workflow_submit',
      'svc_workflow_read',
    ]);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    console.log(
      `runs bench (${id}; API and worker in their own processes, ${CONCURRENT_RUNS} slots, ${os.cpus().length} CPUs, load average at start ${load1()})`,
    );

    // 3a first, while the worker and Temporal are idle: the endpoint alone (see the header).
    let accepted = 0;
    const submitLoad = async (target: string, apiPid: number, label: string) => {
      const expiresAt = new Date(
        Date.now() + (SUBMIT_WARMUP_SECONDS + SUBMIT_DURATION_SECONDS + 20) * 1000,
      ).toISOString();
      const body = JSON.stringify({
        image,
        command: ['true'],
        scheduled_start: '2999-01-01T00:00:00Z',
        expires_at: expiresAt,
      });
      const run = (duration: number) =>
        openLoop(SUBMIT_RATE_PER_SECOND, duration, () =>
          httpCall(target, 'POST', '/api/v1/runs', headers, body),
        );
      // Not measured: a fresh process compiles and optimises its request path first.
      const warmup = await run(SUBMIT_WARMUP_SECONDS);
      const cpuBefore = processCpuMs(apiPid);
      const load = await run(SUBMIT_DURATION_SECONDS);
      const apiCpuMs = (processCpuMs(apiPid) - cpuBefore) / Math.max(1, load.ok);
      accepted += warmup.ok + load.ok;
      const ms = (p: number) => percentile(load.latenciesMs, p).toFixed(1);
      console.log(
        `${label.padEnd(20)}${SUBMIT_RATE_PER_SECOND}/s for ${SUBMIT_DURATION_SECONDS} s, evenly spaced: p50 ${ms(50)} ms  p99 ${ms(99)} ms  max ${ms(100)} ms  (bar: p99 < 50 ms)  2xx ${load.ok}  failed ${load.errors}  not sent ${load.skipped}; API CPU per submit ${apiCpuMs.toFixed(2)} ms; load ${load1()}`,
      );
      return { endedMs: Date.now(), accepted: warmup.ok + load.ok };
    };
    /** The other half of accepting a run: its workflow started in Temporal (after the 202). */
    const waitWorkflowsStarted = async (from: { endedMs: number; accepted: number }) => {
      for (;;) {
        const unstarted = (await pool.oneFirst(sql.unsafe`
          SELECT count(*)::int FROM runs.runs WHERE tenant_id = ${tenantId} AND workflow_input IS NOT NULL`)) as number;
        const lagSeconds = (Date.now() - from.endedMs) / 1000;
        if (unstarted === 0 || lagSeconds > 180) {
          console.log(
            `${''.padEnd(20)}their workflows: ${unstarted === 0 ? 'all' : `all but ${unstarted}`} started ${lagSeconds.toFixed(1)} s after the last submit (${(from.accepted / (lagSeconds + SUBMIT_WARMUP_SECONDS + SUBMIT_DURATION_SECONDS)).toFixed(0)} runs/s from first submit to last start)`,
          );
          return;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
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
    const front = await startApi(
      { ...env, TEMPORAL_ADDRESS: '127.0.0.1:1' },
      apiLog('api-front'),
      port + 1,
    );
    children.push(front);
    const frontUrl = `http://127.0.0.1:${port + 1}`;
    await fetch(`${frontUrl}/api/v1/tenant/quotas`, {
      method: 'PUT',
      headers,
      body: JSON.stringify({
        max_concurrent_runs: CONCURRENT_RUNS,
        max_daily_runs: 1_000_000,
        max_nodes_per_workflow: Math.max(DAG_WIDTH + 2, DAG_CHAIN),
      }),
    });
    const endpointOnly = PHASES.has('submit')
      ? await submitLoad(frontUrl, front.pid!, 'submit (endpoint)')
      : null;
    stop(front);

    // The main API: its sweeper starts the runs accepted above, then every other figure.
    const api = await startApi(env, apiLog('api'), port);
    children.push(api);
    const url = `http://127.0.0.1:${port}`;
    if (endpointOnly) {
      await waitWorkflowsStarted(endpointOnly);
      // Their expiry is Temporal work too: let it finish before the next figure.
      const deferred = (await pool.anyFirst(sql.unsafe`
        SELECT track_id FROM runs.runs WHERE tenant_id = ${tenantId}`)) as string[];
      await waitTerminal(deferred, 300_000);
    }
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

    // Warm-up: the image is in the registry and pulled once.
    await waitTerminal([await submit({ image, command: ['true'] })], 60_000);
    const ran: string[] = [];
    // 1. Submit-to-running latency, one run at a time.
    if (PHASES.has('latency')) {
      const latencyIds: string[] = [];
      for (let i = 0; i < LATENCY_RUNS; i++) {
        const trackId = await submit({ image, command: ['true'] });
        latencyIds.push(trackId);
        await waitTerminal([trackId], 60_000);
      }
      ran.push(...latencyIds);
      const latencies = (await pool.anyFirst(sql.unsafe`
        SELECT extract(epoch FROM started_at - submitted_at)::float8 AS seconds FROM runs.runs
        WHERE track_id = ANY(${sql.array(latencyIds, 'text')})`)) as number[];
      console.log(
        `submit-to-running   n=${latencies.length}  p50 ${seconds(percentile(latencies, 50))}  p99 ${seconds(percentile(latencies, 99))}  (bar: p50 ≤ 1.5 s, p99 ≤ 3 s; load ${load1()})`,
      );
    }

    // 2. Sustained completed runs per second, beside the engine's own rate.
    if (PHASES.has('throughput')) {
      const engine = await directRate(docker, image, THROUGHPUT_RUNS, CONCURRENT_RUNS);
      // A marker for per-process CPU samplers that measure this phase alone.
      console.log(`throughput: submitting ${THROUGHPUT_RUNS} runs (load ${load1()})`);
      const commitsBefore = await databaseCommits(pool);
      const { result: batch, cpuUs } = await cpuPerUnit(
        await stackCpuReaders(pool, { api: api.pid!, worker: worker.pid! }),
        async () => {
          const ids = await Promise.all(
            Array.from({ length: THROUGHPUT_RUNS }, () => submit({ image, command: ['true'] })),
          );
          await waitTerminal(ids, 600_000);
          return ids;
        },
        (ids) => ids.length,
      );
      const commits = (await databaseCommits(pool)) - commitsBefore;
      ran.push(...batch);
      const window = (await pool.one(sql.unsafe`
        SELECT extract(epoch FROM max(finished_at) - min(submitted_at))::float8 AS seconds,
               count(*) FILTER (WHERE state = 'exited')::int AS exited
        FROM runs.runs WHERE track_id = ANY(${sql.array(batch, 'text')})`)) as {
        seconds: number;
        exited: number;
      };
      const rate = window.exited / window.seconds;
      console.log(
        `completed runs/s    ${rate.toFixed(2)}  (${window.exited}/${THROUGHPUT_RUNS} exited in ${seconds(window.seconds)}; load ${load1()}); the engine alone, ${CONCURRENT_RUNS} at a time: ${engine.toFixed(2)}/s; ratio ${(rate / engine).toFixed(2)}`,
      );
      console.log(`CPU µs per run      ${cpuLine(cpuUs)}`);
      console.log(
        `Postgres per run    ${(commits / batch.length).toFixed(1)} committed transactions (every client of the database)`,
      );
      const history = await meanHistory(temporal, batch.map(runWorkflowId));
      console.log(`history per run     ${historyLine(history)} (mean of a sample)`);
    }
    const perRun = (await pool.any(sql.unsafe`
      SELECT track_id, count(*) FILTER (WHERE to_state = 'running')::int AS running,
             count(*) FILTER (WHERE to_state IN ('exited', 'failed', 'timeout', 'killed'))::int AS terminal
      FROM runs.run_events WHERE track_id = ANY(${sql.array(ran, 'text')}) GROUP BY track_id`)) as {
      running: number;
      terminal: number;
    }[];
    const duplicated = perRun.filter((r) => r.running !== 1 || r.terminal !== 1).length;
    const lost = ran.length - perRun.length;

    // 4. The DAG figures, against the same containers on the engine in the same run.
    if (PHASES.has('dag'))
      for (const shape of [fanOutFanIn(DAG_WIDTH), chain(DAG_CHAIN)])
        console.log(await dagFigure({ url, headers, pool, docker, temporal, image }, shape));

    // 3b. The main API, starting workflows as it accepts runs.
    if (PHASES.has('submit'))
      await waitWorkflowsStarted(await submitLoad(url, api.pid!, 'submit (+workflows)'));
    const stored = (await pool.oneFirst(sql.unsafe`
      SELECT count(*)::int FROM runs.runs WHERE tenant_id = ${tenantId} AND scheduled_start IS NOT NULL`)) as number;
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
    for (const child of children.reverse()) stop(child);
    await temporal.connection.close();
    await pool.end();
  }
}

/** Transactions committed in the database so far, by every client (pg_stat_database). */
async function databaseCommits(pool: DatabasePool): Promise<number> {
  return Number(
    await pool.oneFirst(sql.unsafe`
      SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`),
  );
}

main().catch((error: unknown) => {
  console.error('bench failed:', error);
  process.exit(1);
});
