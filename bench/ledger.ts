/**
 * Ledger benchmark (not a test): boots the ledger API as its own process against the local
 * stack, then prints throughput and p50/p99 of
 *   1. 2-entry postings over HTTP spread over 1,000 accounts,
 *   2. the same with every posting touching one hot account that has a floor,
 *   (each twice: N clients in a loop for the most it sustains, then sent evenly at the first
 *   bar's rate, 1,500/s and 500/s, for the latency at that rate)
 *   3. balance-as-of on an account with 100,000 entries,
 *   4. the async balance rollup over a large journal: the full recompute it was before
 *      migration 0008 against the delta queue (idle tick, a tick after 1,000 postings, a backlog
 *      drain) and the repair rebuild. Runs after the API is stopped, so nothing else consumes.
 * The monthly call quota is metered through the quota service, as scripts/start wires it: its
 * own API process, a quota tenant of the bench's own; `--metering off` leaves it out.
 * Usage: npm run bench:ledger [-- --seconds 10 --concurrency 32 --profile-api /tmp/prof]
 *        npm run bench:ledger -- --phase rollup [--rollup-journal 200000]
 *        npm run bench:ledger -- --phase postings   (phases 1 and 2 only)
 *        npm run bench:ledger -- --phase rates      (only their evenly-spaced halves)
 *        npm run bench:ledger -- --phase rates --spread-rates 1000,1250,1500   (a rate sweep)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { v7 as uuidv7 } from 'uuid';
import { loadConfig } from '../platform/config';
import { createDatabasePool, sql, type DatabasePool } from '../db/pool';
import { withSystem, withTenant } from '../db/ledger/context';
import { insertTenant } from '../db/ledger/tenants';
import {
  drainAsyncBalances,
  insertAccount,
  insertAssetType,
  rebuildAsyncBalances,
  rollupAsyncBalances,
} from '../db/ledger/accounts';
import { issueKey } from '../services/ledger/credentials';
import { loadStackEnv } from '../test/support/stack-env';
import { cleanTestNamespace, testNamespace, testRunPrefix } from '../test/support/test-namespace';
import { scrapeMetrics } from '../test/support/metrics-scrape';
import { watchEventLoop } from '../platform/event-loop';
import {
  closedLoop,
  httpCall,
  openLoop,
  percentile,
  slowestWindows,
  type LoadFigures,
} from './lib/http-load';
import { processCpuMs } from './lib/process-cpu';
import { HostCpu } from './lib/host-cpu';
import { machineSpeedMs } from './lib/machine-speed';
import { freePort } from '../test/support/throwaway-backends';
import { stopProcessGroup } from '../test/support/api-process';
import { meteringKeys, startQuotaProcess } from '../test/support/platform-metering';

const ACCOUNTS = 1_000;
const AS_OF_ENTRIES = 100_000;
/** The first bar's rates: latency is also measured with postings sent evenly at these. */
const SPREAD_BAR_RATE = 1_500;
const HOT_BAR_RATE = 500;
/** Past this many unanswered postings the open loop stops sending (and counts what it skips). */
const OPEN_LOOP_IN_FLIGHT = 256;
const REPO_ROOT = path.resolve(__dirname, '..');

interface Figures extends LoadFigures {
  /**
   * CPU spent per successful request by the API process, its Postgres backends, the quota
   * service's process (metering), this process.
   */
  cpuMsPerRequest?: { api: number; postgres: number; quota: number; loadGenerator: number };
  /** The posting batchers' calls during the phase (group commit). */
  batches?: BatchTotals;
  /** The whole machine's CPU during the phase. */
  host: HostCpu;
}

const WINDOW_MS = 250;

/** The posting batchers' histograms (services/ledger/metrics.ts), both paths summed. */
interface BatchTotals {
  calls: number;
  postings: number;
  waitSeconds: number;
  flightSeconds: number;
}

async function batchTotals(base: string): Promise<BatchTotals> {
  const total = await scrapeMetrics(base);
  return {
    calls: total('ledger_posting_batch_size_count'),
    postings: total('ledger_posting_batch_size_sum'),
    waitSeconds: total('ledger_posting_batch_wait_seconds_sum'),
    flightSeconds: total('ledger_posting_batch_flight_seconds_sum'),
  };
}

interface PhaseSample {
  batches: BatchTotals;
  api: number;
  quota: number;
  /** CPU ms by backend pid (a backend that ended during a phase is not counted). */
  postgres: Map<number, number>;
  loadGenerator: number;
}

/**
 * What a phase cost: CPU of the API process, its Postgres backends and the load generator, and
 * the posting batchers' calls.
 */
class PhaseMeter {
  constructor(
    private readonly apiPid: number,
    private readonly quotaPid: number | null,
    private readonly pool: DatabasePool,
    private readonly base: string,
  ) {}

  async sample(): Promise<PhaseSample> {
    const backends = (await this.pool.anyFirst(
      sql.unsafe`SELECT pid FROM pg_stat_activity WHERE application_name = 'ledger-api'`,
    )) as number[];
    const usage = process.cpuUsage();
    return {
      batches: await batchTotals(this.base),
      api: processCpuMs(this.apiPid),
      quota: this.quotaPid === null ? 0 : processCpuMs(this.quotaPid),
      postgres: new Map(backends.map((pid) => [pid, processCpuMs(pid)])),
      loadGenerator: (usage.user + usage.system) / 1000,
    };
  }
}

function report(name: string, f: Figures): void {
  const cpu = f.cpuMsPerRequest;
  const ms = (p: number) => percentile(f.latenciesMs, p).toFixed(1);
  console.log(
    `${name.padEnd(44)} ${(f.ok / f.seconds).toFixed(0).padStart(6)} req/s  p50 ${ms(50)} ms  p99 ${ms(99)} ms  (${f.ok} ok, ${f.errors} failed${f.skipped ? `, ${f.skipped} not sent: ${OPEN_LOOP_IN_FLIGHT} unanswered` : ''}, ${f.seconds.toFixed(1)} s)` +
      (cpu
        ? `\n${''.padEnd(44)} CPU per request: API ${cpu.api.toFixed(2)} ms, Postgres ${cpu.postgres.toFixed(2)} ms, quota service ${cpu.quota.toFixed(2)} ms, load generator ${cpu.loadGenerator.toFixed(2)} ms; the machine ${(f.host.busyShare() * 100).toFixed(0)}% busy (both cores, every process)`
        : ''),
  );
  const b = f.batches;
  if (b && b.calls > 0)
    console.log(
      `${''.padEnd(44)} posting batches: ${b.calls} calls of ${(b.postings / b.calls).toFixed(1)} postings on average; the oldest posting waited ${((b.waitSeconds / b.calls) * 1000).toFixed(1)} ms for its call, which took ${((b.flightSeconds / b.calls) * 1000).toFixed(1)} ms (means)`,
    );
  if (f.skipped === 0 && percentile(f.latenciesMs, 99) > 2 * percentile(f.latenciesMs, 50)) {
    const stolen = (w: { startMs: number }) => {
      const from = f.originMs + w.startMs;
      return f.host.available
        ? `, host took ${f.host.stealBetween(from, from + WINDOW_MS)} ms`
        : '';
    };
    const windows = slowestWindows(f, WINDOW_MS, 3)
      .map((w) => `${(w.startMs / 1000).toFixed(2)} s: ${w.maxMs.toFixed(0)} ms${stolen(w)}`)
      .join('; ');
    console.log(
      `${''.padEnd(44)} slowest ${WINDOW_MS} ms windows (from the phase's start: slowest request, CPU time the VM's host gave to others): ${windows}`,
    );
  }
}

/** The quota service the ledger meters through, and the ledger's key there (a tenant of its own). */
async function bootQuota(): Promise<{ process: ChildProcess; env: Record<string, string> }> {
  const port = await freePort();
  // In the tests' namespace, as main() set for every process the bench starts.
  const quotaProcess = await startQuotaProcess(port, `bench-ledger-quota-${process.pid}`);
  // One quota tenant for every bench run (found by its name): its first key's bootstrap is
  // started once, in the tests' namespace on this run's queues (main() sets both, and ends it).
  const keys = await meteringKeys('ledger bench');
  return {
    process: quotaProcess,
    env: { QUOTA_URL: `http://127.0.0.1:${port}`, LEDGER_QUOTA_KEY: keys.LEDGER_QUOTA_KEY! },
  };
}

async function bootApi(
  port: number,
  metering: Record<string, string>,
  profileDir?: string,
): Promise<ChildProcess> {
  // node --import tsx (not the tsx binary) so that V8 flags reach the API process itself.
  const profile = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  // Extra node options of the API process, e.g. --trace-gc (as bench/runs.ts).
  const extra = (process.env.BENCH_API_NODE_OPTIONS ?? '').split(' ').filter((a) => a !== '');
  // The young generation's size the API runs with (Dockerfile, scripts/start).
  const heap = ['--max-semi-space-size=64'];
  const args = [...heap, ...profile, ...extra, '--import', 'tsx', 'api/main.ts', 'ledger'];
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      LEDGER_PORT: String(port),
      LOG_LEVEL: 'warn',
      // One load generator on one address: widen the edge, lift the monthly quota.
      LEDGER_EDGE_RATE_PER_SECOND: '1000000',
      LEDGER_EDGE_BURST: '1000000',
      LEDGER_MONTHLY_CALL_QUOTA: '1000000000',
      LEDGER_HOLD_SWEEP_SCHEDULE: 'false',
      QUOTA_URL: '',
      ...metering,
      // Whatever it would start in Temporal stays out of the operators' namespace.
      TEMPORAL_NAMESPACE: testNamespace(),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  for (let i = 0; i < 200; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return child;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill();
  throw new Error('ledger API did not start');
}

/** One phase's load, with the CPU it cost each process when a meter is given. */
async function measured(load: () => Promise<LoadFigures>, meter?: PhaseMeter): Promise<Figures> {
  const before = await meter?.sample();
  const host = new HostCpu();
  host.start();
  const figures: Figures = { ...(await load()), host };
  host.stop();
  if (meter && before) {
    const after = await meter.sample();
    const per = (a: number, b: number) => (a - b) / Math.max(1, figures.ok);
    let postgres = 0;
    // A backend opened during the phase counts from zero (its whole life is in the phase).
    for (const [pid, ms] of after.postgres) postgres += ms - (before.postgres.get(pid) ?? 0);
    figures.cpuMsPerRequest = {
      api: per(after.api, before.api),
      quota: per(after.quota, before.quota),
      postgres: postgres / Math.max(1, figures.ok),
      loadGenerator: per(after.loadGenerator, before.loadGenerator),
    };
    figures.batches = {
      calls: after.batches.calls - before.batches.calls,
      postings: after.batches.postings - before.batches.postings,
      waitSeconds: after.batches.waitSeconds - before.batches.waitSeconds,
      flightSeconds: after.batches.flightSeconds - before.batches.flightSeconds,
    };
  }
  return figures;
}

async function provision(pool: DatabasePool) {
  const tenantId = uuidv7();
  await withSystem(pool, (tx) =>
    insertTenant(tx, {
      tenantId,
      parentId: null,
      name: 'bench',
      kind: 'sandbox',
      contactEmail: null,
    }),
  );
  const keys = await withSystem(pool, async (tx) => ({
    admin: (await issueKey(tx, { tenantId, role: 'ledger_admin', label: 'bench', ttlDays: 1 }))
      .secret,
    poster: (await issueKey(tx, { tenantId, role: 'ledger_poster', label: 'bench', ttlDays: 1 }))
      .secret,
    reader: (await issueKey(tx, { tenantId, role: 'ledger_reader', label: 'bench', ttlDays: 1 }))
      .secret,
  }));
  return { tenantId, keys };
}

/**
 * What the bench and the processes it starts begin in Temporal (a quota tenant's bootstrap, a
 * hold's workflow) stays out of the operators' namespace, on task queues of this run's own that
 * no worker serves; it is ended when the bench is done, as a test run's teardown ends its own.
 */
async function main(): Promise<void> {
  loadStackEnv();
  const runPrefix = testRunPrefix();
  process.env.TEMPORAL_NAMESPACE = testNamespace();
  process.env.TASK_QUEUE_PREFIX = runPrefix;
  try {
    await bench();
  } finally {
    await cleanTestNamespace(loadConfig(), runPrefix);
  }
}

async function bench(): Promise<void> {
  // A stall of the load generator itself shows as latency of the service: say when it happens.
  watchEventLoop((stall) =>
    console.log(`${''.padEnd(44)} (the load generator's event loop was held up ${stall.maxMs} ms)`),
  );
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '10' },
      concurrency: { type: 'string', default: '32' },
      // Writes a V8 CPU profile of the API process there when it stops (chrome://inspect).
      'profile-api': { type: 'string' },
      // `rollup`: only phase 4 (no API process); `postings`: only phases 1 and 2; `rates`: only
      // their evenly-spaced halves (the bars' latencies), each after a short warm-up.
      phase: { type: 'string' },
      'rollup-journal': { type: 'string', default: '200000' },
      // The spread postings' evenly spaced rates, e.g. 1000,1250,1500: up to which rate the p99
      // bar holds on this machine (default: the bar's rate only).
      'spread-rates': { type: 'string', default: String(SPREAD_BAR_RATE) },
      // `off`: the ledger without metering (no quota service), for the cost of metering.
      metering: { type: 'string', default: 'on' },
    },
  });
  const spreadRates = values['spread-rates'].split(',').map(Number);
  if (spreadRates.some((rate) => !Number.isInteger(rate) || rate < 1))
    throw new Error(
      `--spread-rates: positive integers, comma-separated (${values['spread-rates']})`,
    );
  const rollupJournal = Number(values['rollup-journal']);
  const seconds = Number(values.seconds);
  const concurrency = Number(values.concurrency);
  const pool = await createDatabasePool(loadConfig(), {
    applicationName: 'ledger-bench',
    maximumPoolSize: 4,
  });
  if (values.phase === 'rollup') {
    try {
      await rollupPhase(pool, rollupJournal);
    } finally {
      await pool.end();
    }
    return;
  }
  const port = await freePort();
  // Measured while the machine is quiet: once the API runs, its start-up work competes.
  const speedMs = machineSpeedMs();
  const quota = values.metering === 'off' ? null : await bootQuota();
  const api = await bootApi(port, quota?.env ?? {}, values['profile-api']);
  const base = `http://127.0.0.1:${port}`;
  const meter = new PhaseMeter(api.pid!, quota?.process.pid ?? null, pool, base);
  try {
    const { tenantId, keys } = await provision(pool);
    let keyCounter = 0;
    const call = (token: string, method: string, route: string, body?: unknown) =>
      httpCall(
        base,
        method,
        route,
        {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          ...(method === 'GET'
            ? {}
            : { 'idempotency-key': `bench-${process.pid}-${++keyCounter}` }),
        },
        body === undefined ? undefined : JSON.stringify(body),
      );
    const asset = (
      await call(keys.admin, 'POST', '/v1/asset-types', { code: 'USD', kind: 'fiat', scale: 2 })
    ).json() as { asset_type_id: string };
    const account = async (extra: Record<string, unknown>) =>
      (
        (
          await call(keys.admin, 'POST', '/v1/accounts', {
            asset_type_id: asset.asset_type_id,
            normal_side: 'credit',
            ...extra,
          })
        ).json() as { account_id: string }
      ).account_id;

    const accounts: string[] = [];
    for (let i = 0; i < ACCOUNTS; i += 50) {
      accounts.push(
        ...(await Promise.all(Array.from({ length: 50 }, () => account({ balance_floor: null })))),
      );
    }
    const pick = () => accounts[Math.floor(Math.random() * accounts.length)]!;
    const transfer = (from: string, to: string) => ({
      entries: [
        { account_id: from, direction: 'debit', amount: '0.01' },
        { account_id: to, direction: 'credit', amount: '0.01' },
      ],
    });

    console.log(
      `ledger bench: ${concurrency} concurrent clients, ${seconds} s per phase, ${ACCOUNTS} accounts, metering ${quota ? 'through the quota service' : 'off'}; ` +
        `machine speed: 100,000 SHA-256 digests in ${speedMs.toFixed(0)} ms on one core (before the API started)`,
    );
    const spreadTransfer = () => {
      const from = pick();
      let to = pick();
      while (to === from) to = pick();
      return call(keys.poster, 'POST', '/v1/transactions', transfer(from, to));
    };
    const ratesOnly = values.phase === 'rates';
    await closedLoop(concurrency, 2, spreadTransfer); // warm-up
    if (!ratesOnly)
      report(
        'postings spread over 1,000 accounts',
        await measured(() => closedLoop(concurrency, seconds, spreadTransfer), meter),
      );
    for (const rate of spreadRates)
      report(
        `  evenly spaced at ${rate === SPREAD_BAR_RATE ? "the bar's " : ''}${rate}/s`,
        await measured(() => openLoop(rate, seconds, spreadTransfer, OPEN_LOOP_IN_FLIGHT), meter),
      );

    const hot = await account({ balance_floor: '0.00' });
    const funding = await account({ balance_floor: null });
    const funded = await call(keys.poster, 'POST', '/v1/transactions', {
      entries: [
        { account_id: funding, direction: 'debit', amount: '100000000.00' },
        { account_id: hot, direction: 'credit', amount: '100000000.00' },
      ],
    });
    if (funded.status !== 201) throw new Error(`funding the hot account failed: ${funded.status}`);
    const hotTransfer = () => call(keys.poster, 'POST', '/v1/transactions', transfer(hot, pick()));
    if (ratesOnly)
      await closedLoop(concurrency, 2, hotTransfer); // warm-up
    else
      report(
        'postings all touching one hot floored account',
        await measured(() => closedLoop(concurrency, seconds, hotTransfer), meter),
      );
    report(
      `  evenly spaced at the bar's ${HOT_BAR_RATE}/s`,
      await measured(
        () => openLoop(HOT_BAR_RATE, seconds, hotTransfer, OPEN_LOOP_IN_FLIGHT),
        meter,
      ),
    );

    if (values.phase === 'postings' || ratesOnly) return;
    const deep = await account({ balance_floor: null });
    const other = await account({ balance_floor: null });
    console.log(`seeding ${AS_OF_ENTRIES} entries on one account for as-of ...`);
    await seedDeepAccount(pool, tenantId, asset.asset_type_id, deep, other);
    const oldest = Date.now() - AS_OF_ENTRIES * 1000;
    const asOf = await measured(
      () =>
        closedLoop(1, Math.max(3, seconds / 2), () => {
          const at = new Date(oldest + Math.random() * AS_OF_ENTRIES * 1000 * 1.05).toISOString();
          return call(
            keys.reader,
            'GET',
            `/v1/accounts/${deep}/balance-as-of?at=${encodeURIComponent(at)}&basis=${Math.random() < 0.5 ? 'effective' : 'recorded'}`,
          );
        }),
      meter,
    );
    report(`balance-as-of on an account with ${AS_OF_ENTRIES} entries`, asOf);
    await stopApi(api);
    await rollupPhase(pool, rollupJournal);
  } finally {
    // The API first: when it stops, it gives the calls it took ahead back to the quota service.
    await stopApi(api);
    if (quota) await stopProcessGroup(quota.process);
    await pool.end();
  }
}

/** Stops the API process, once, and waits for it to be gone. */
async function stopApi(api: ChildProcess): Promise<void> {
  if (api.exitCode !== null || api.signalCode !== null) return;
  const exited = new Promise((resolve) => api.once('exit', resolve));
  api.kill('SIGTERM');
  await exited;
}

/** The async rollup as it was before migration 0008: every async account re-summed each tick. */
const FULL_RECOMPUTE = sql.unsafe`
  UPDATE ledger.balances b
  SET posted_debits = s.pd, posted_credits = s.pc, pending_debits = s.hd, pending_credits = s.hc,
      version = b.version + CASE WHEN (b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits)
                                      IS DISTINCT FROM (s.pd, s.pc, s.hd, s.hc) THEN 1 ELSE 0 END,
      rolled_up_at = ledger.now_ms()
  FROM (
    SELECT a.account_id,
           coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'committed' AND e.direction = 'debit'), 0) AS pd,
           coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'committed' AND e.direction = 'credit'), 0) AS pc,
           coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'pending' AND e.direction = 'debit'), 0) AS hd,
           coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'pending' AND e.direction = 'credit'), 0) AS hc
    FROM ledger.accounts a
    LEFT JOIN ledger.entries e ON e.account_id = a.account_id
    LEFT JOIN ledger.transactions t ON t.transaction_id = e.transaction_id
    WHERE a.balance_tracking = 'async'
    GROUP BY a.account_id) s
  WHERE b.account_id = s.account_id`;

const ROLLUP_ACCOUNTS = 100;

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Phase 4: `transactions` committed 2-leg transactions between 100 async accounts straight
 * into the journal (their deltas queue up through the journal triggers), then the figures.
 */
async function rollupPhase(pool: DatabasePool, transactions: number): Promise<void> {
  const { tenantId } = await provision(pool);
  const assetTypeId = uuidv7();
  const accounts = Array.from({ length: ROLLUP_ACCOUNTS }, () => uuidv7());
  await withTenant(pool, tenantId, async (tx) => {
    await insertAssetType(tx, {
      assetTypeId,
      tenantId,
      code: 'USD',
      kind: 'fiat',
      scale: 2,
      description: null,
    });
    for (const accountId of accounts)
      await insertAccount(tx, {
        accountId,
        tenantId,
        assetTypeId,
        name: 'async',
        normalSide: 'credit',
        floorMinor: null,
        tracking: 'async',
        metadata: {},
      });
  });
  const seed = async (n: number) =>
    withTenant(pool, tenantId, async (tx) => {
      await tx.query(sql.unsafe`SELECT set_config('statement_timeout', '600s', true)`);
      await tx.query(sql.unsafe`
        WITH series AS (
          SELECT gen_random_uuid() AS tid, i, ledger.now_ms() AS at FROM generate_series(1, ${n}) AS i),
        txs AS (
          INSERT INTO ledger.transactions (transaction_id, tenant_id, state, pending, description, effective_at, created_at, finalized_at)
          SELECT tid, ${tenantId}, 'committed', false, 'bench seed', at, at, at FROM series
          RETURNING transaction_id, finalized_at),
        numbered AS (SELECT t.transaction_id, t.finalized_at, s.i FROM txs t JOIN series s ON s.tid = t.transaction_id),
        legs AS (
          INSERT INTO ledger.entries (entry_id, tenant_id, transaction_id, account_id, asset_type_id, line_no, direction, amount_minor, created_at)
          SELECT gen_random_uuid(), ${tenantId}, n.transaction_id,
                 (${sql.array(accounts, 'uuid')})[1 + ((n.i * x.k) % ${ROLLUP_ACCOUNTS})], ${assetTypeId},
                 x.line_no, x.direction, 1 + n.i % 997, n.finalized_at
          FROM numbered n CROSS JOIN (VALUES (1, 'credit', 1), (2, 'debit', 7)) AS x(line_no, direction, k)
          RETURNING entry_id, account_id, direction, amount_minor, created_at)
        INSERT INTO ledger.committed_legs (entry_id, tenant_id, account_id, effective_at, finalized_at, debit_minor, credit_minor)
        SELECT entry_id, ${tenantId}, account_id, created_at, created_at,
               CASE WHEN direction = 'debit' THEN amount_minor ELSE 0 END,
               CASE WHEN direction = 'credit' THEN amount_minor ELSE 0 END
        FROM legs`);
    });
  const legsOfAsync = async () =>
    Number(
      await withSystem(pool, async (tx) => {
        // The journal of a long-used dev database outgrows the request statement budget.
        await tx.query(sql.unsafe`SELECT set_config('statement_timeout', '600s', true)`);
        return (await tx.oneFirst(sql.unsafe`
          SELECT count(*) FROM ledger.entries e JOIN ledger.accounts a USING (account_id)
          WHERE a.balance_tracking = 'async'`)) as string;
      }),
    );

  console.log(
    `seeding ${transactions} transactions (${2 * transactions} legs) on ${ROLLUP_ACCOUNTS} async accounts ...`,
  );
  await seed(transactions);
  await pool.query(sql.unsafe`VACUUM ANALYZE ledger.entries`);
  await pool.query(sql.unsafe`VACUUM ANALYZE ledger.transactions`);
  const drain = await timed(() => drainAsyncBalances(pool, 600_000));
  console.log(
    `  backlog drain: ${drain.value.deltas} deltas in ${drain.value.batches} batches, ${drain.ms.toFixed(0)} ms ` +
      `(${Math.round((drain.value.deltas / drain.ms) * 1000)} deltas/s)`,
  );
  await pool.query(sql.unsafe`VACUUM ANALYZE ledger.async_balance_deltas`);
  const journal = await legsOfAsync();
  console.log(`async rollup with ${journal} legs on async accounts in the journal (all tenants):`);

  // Before: rolled back each time, so the queue stays the only writer of these rows.
  const rolledBack = new Error('rolled back');
  const before: number[] = [];
  for (let i = 0; i < 5; i++) {
    const start = process.hrtime.bigint();
    await withSystem(pool, async (tx) => {
      await tx.query(sql.unsafe`SELECT set_config('statement_timeout', '600s', true)`);
      await tx.query(FULL_RECOMPUTE);
      before.push(Number(process.hrtime.bigint() - start) / 1e6);
      throw rolledBack;
    }).catch((error: unknown) => {
      if (error !== rolledBack) throw error;
    });
  }
  console.log(
    `  before (full recompute, every tick, every API process): median ${median(before).toFixed(1)} ms`,
  );

  const idle: number[] = [];
  for (let i = 0; i < 50; i++) idle.push((await timed(() => rollupAsyncBalances(pool))).ms);
  console.log(`  after, idle tick (empty queue): median ${median(idle).toFixed(2)} ms`);

  const busy: number[] = [];
  for (let i = 0; i < 5; i++) {
    await seed(1_000);
    busy.push((await timed(() => rollupAsyncBalances(pool))).ms);
  }
  console.log(
    `  after, tick applying 2,000 deltas (1,000 postings): median ${median(busy).toFixed(1)} ms`,
  );

  const rebuild = await timed(() => rebuildAsyncBalances(pool));
  console.log(
    `  repair rebuild (ledger-admin balances rebuild): ${rebuild.ms.toFixed(0)} ms, ` +
      `${rebuild.value.accounts} accounts, ${rebuild.value.drifted} drifted`,
  );
}

/** 100,000 committed 2-leg transactions straight into the journal, one per second back in time. */
async function seedDeepAccount(
  pool: DatabasePool,
  tenantId: string,
  assetTypeId: string,
  deep: string,
  other: string,
): Promise<void> {
  await withTenant(pool, tenantId, async (tx) => {
    await tx.query(sql.unsafe`SELECT set_config('statement_timeout', '600s', true)`);
    await tx.query(sql.unsafe`
      WITH series AS (
        SELECT gen_random_uuid() AS tid, ledger.now_ms() - make_interval(secs => ${AS_OF_ENTRIES} - i) AS at
        FROM generate_series(1, ${AS_OF_ENTRIES}) AS i),
      txs AS (
        INSERT INTO ledger.transactions (transaction_id, tenant_id, state, pending, description, effective_at, created_at, finalized_at)
        SELECT tid, ${tenantId}, 'committed', false, 'bench seed', at, at, at FROM series
        RETURNING transaction_id, finalized_at),
      legs AS (
        INSERT INTO ledger.entries (entry_id, tenant_id, transaction_id, account_id, asset_type_id, line_no, direction, amount_minor, created_at)
        SELECT gen_random_uuid(), ${tenantId}, txs.transaction_id, x.account_id, ${assetTypeId}, x.line_no, x.direction, 1, txs.finalized_at
        FROM txs CROSS JOIN (VALUES (${deep}::uuid, 1, 'credit'), (${other}::uuid, 2, 'debit')) AS x(account_id, line_no, direction)
        RETURNING entry_id, account_id, direction, created_at)
      INSERT INTO ledger.committed_legs (entry_id, tenant_id, account_id, effective_at, finalized_at, debit_minor, credit_minor)
      SELECT entry_id, ${tenantId}, account_id, created_at, created_at,
             CASE WHEN direction = 'debit' THEN 1 ELSE 0 END, CASE WHEN direction = 'credit' THEN 1 ELSE 0 END
      FROM legs`);
    await tx.query(
      sql.unsafe`UPDATE ledger.balances SET posted_credits = posted_credits + ${AS_OF_ENTRIES}, version = version + 1 WHERE account_id = ${deep}`,
    );
    await tx.query(
      sql.unsafe`UPDATE ledger.balances SET posted_debits = posted_debits + ${AS_OF_ENTRIES}, version = version + 1 WHERE account_id = ${other}`,
    );
  });
  await pool.query(sql.unsafe`VACUUM ANALYZE ledger.committed_legs`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
