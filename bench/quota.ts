/**
 * Quota benchmark (not a test), for issue "quota decisions at the speed of their floor":
 * decisions per second, p50/p99 and the CPU each process spends per decision, over HTTP, each
 * row as a ratio of a baseline measured in the same run on the same cores:
 *   - pgbench, baseline of the strict rows: tpcb-like, N clients, on the stack's PostgreSQL
 *     (database bench_pgbench, scale 10: bench/lib/pgbench.ts);
 *   - the floor, baseline of the fast rows: a bare Koa endpoint making one Redis script call
 *     (bench/lib/redis-floor.ts), N clients in a closed loop.
 * Each baseline runs just before its mode's rows and just after them (the VM's speed drifts by
 * up to 2x within minutes); a row's ratio is of the mean of the two.
 * Rows (their names for --only), each N clients in a closed loop for --seconds after 3 s
 * unmeasured, over 1,000 subjects, strict mode's then fast mode's:
 *   consume-<mode>-1, consume-<mode>-5: consume 1 item, 5 items (5 resources, a policy each);
 *   check-<mode>-1: POST /v1/check of 1 item;
 *   hot-<mode>: consume 1 item, every client on one subject and one policy; also as a ratio of
 *     consume-<mode>-1;
 *   alerts-<mode>: consume 1 item with ten alert rules watching its policy (thresholds 10% to
 *     100%: each request is judged against all ten); also as a ratio of the same without;
 *   keyed-<mode>: consume 1 item, each request with its own idempotency key (as the Python SDK
 *     sends); also as a ratio of the same without.
 * Every policy is a lifetime quota of 2^53 - 1, so every request is admitted. Each row prints its
 * errors and, of them, the answers 503 decision_contended; and the CPU per decision, in µs, of
 * the API (the floor's own process on the floor row), redis-server, PostgreSQL (the stack's
 * postmaster and every process under it, with the backends that ended) and the load generator
 * (this process; pgbench on pgbench's rows, per transaction). Then the ratios, and a markdown
 * table of every row for bench/RESULTS.md. Fast mode's ledger entries go to the write-ahead
 * stream; the bench flushes them into Postgres after each row, unmeasured.
 * Usage: npm run bench:quota [-- --seconds 10 --clients 32 --only hot,check --profile /tmp/prof]
 *   --only: rows by name or name prefix, comma-separated (the baselines always run);
 *   --profile: the API runs with --cpu-prof and writes its profile there when it stops.
 * The API's output goes to .data/logs/bench-quota-api.log.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../platform/config';
import { createLogger } from '../platform/logger';
import { insertNewKey } from '../services/quota/keys';
import { TENANT_SCOPE_NAMES } from '../services/quota/scopes';
import { ulid } from '../db/ids';
import { migrateAll } from '../db/migrate';
import { createDatabasePool, sql, type DatabasePool } from '../db/pool';
import { insertTenant, setBootstrapState } from '../db/quota/tenants';
import { closeRedis, connectedRedis, type Redis } from '../db/redis';
import { flushLedgerStream } from '../services/quota/consumption/ledger-flush';
import { DATA_DIR, loadStackEnv } from '../test/support/stack-env';
import { testNamespace } from '../test/support/test-namespace';
import { freePort, startApiProcess, stopProcessGroup } from '../test/support/api-process';
import { cpuPerUnit } from './lib/cpu-per-unit';
import { closedLoop, httpCall, percentile, type Reply } from './lib/http-load';
import { preparePgbench, runPgbench, vacuumPgbench } from './lib/pgbench';
import { endedChildrenCpuMs, postmasterPid, processCpuMs } from './lib/process-cpu';
import { processTreeCpuMs } from './lib/process-tree-cpu';

const REPO_ROOT = path.resolve(__dirname, '..');
const SUBJECTS = 1_000;
const API_LOG = path.join(DATA_DIR, 'logs', 'bench-quota-api.log');
const JSON_HEADERS = { 'content-type': 'application/json' };

type Mode = 'strict' | 'fast';

interface Row {
  name: string;
  what: string;
  mode: Mode;
  route: '/v1/consume' | '/v1/check';
  resources: number;
  alertRules: number;
  hot: boolean;
  /** Each request sends its own idempotency key (as the Python SDK always does). */
  keyed: boolean;
  /** The row this one is also read against, and how that ratio reads. */
  against?: { name: string; reads: string };
}

function rowsOf(mode: Mode): Row[] {
  const spread = `consume-${mode}-1`;
  const row = (name: string, what: string, extra: Partial<Row> = {}): Row => ({
    name,
    what,
    mode,
    route: '/v1/consume',
    resources: 1,
    alertRules: 0,
    hot: false,
    keyed: false,
    ...extra,
  });
  return [
    row(spread, `consume ${mode}, 1 item`),
    row(`consume-${mode}-5`, `consume ${mode}, 5 items`, { resources: 5 }),
    row(`check-${mode}-1`, `check ${mode}, 1 item`, { route: '/v1/check' }),
    row(`hot-${mode}`, `hot subject ${mode}, 1 item`, {
      hot: true,
      against: { name: spread, reads: `of ${spread} (spread over ${SUBJECTS} subjects)` },
    }),
    row(`alerts-${mode}`, `${mode}, 1 item, 10 alert rules`, {
      alertRules: 10,
      against: { name: spread, reads: 'of the same without' },
    }),
    row(`keyed-${mode}`, `consume ${mode}, 1 item, idempotency key`, {
      keyed: true,
      against: { name: spread, reads: 'of the same without' },
    }),
  ];
}

const ROWS = [...rowsOf('strict'), ...rowsOf('fast')];

/** The rows `--only` names, by name or name prefix; all without it. */
function selectRows(only: string | undefined): Row[] {
  if (only === undefined) return ROWS;
  const wanted = only.split(',').filter((prefix) => prefix !== '');
  for (const prefix of wanted)
    if (!ROWS.some((row) => row.name.startsWith(prefix)))
      throw new Error(`--only ${prefix}: no such row; rows: ${ROWS.map((r) => r.name).join(', ')}`);
  return ROWS.filter((row) => wanted.some((prefix) => row.name.startsWith(prefix)));
}

/** The floor's process on `port`, once it answers a decision. */
async function startFloor(port: number, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'bench/lib/redis-floor.ts', String(port)],
    { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: 'ignore' },
  );
  for (let i = 0; i < 300; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/`, {
      method: 'POST',
      body: '{"subject":"warm","amount":1}',
    }).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error('the floor (bench/lib/redis-floor.ts) did not start');
}

interface Setup {
  token: string;
  names: string[];
  subjects: number;
}

/** A tenant with a key, the row's resources each under a lifetime quota, on one plan for every subject. */
async function provision(pool: DatabasePool, prefix: string, row: Row): Promise<Setup> {
  const tenantId = `ten_${ulid()}`;
  const subjects = row.hot ? 1 : SUBJECTS;
  return pool.transaction(async (tx) => {
    await insertTenant(tx, { id: tenantId, name: 'bench', bootstrapQueue: `${prefix}quota` });
    await setBootstrapState(tx, tenantId, 'done');
    const key = await insertNewKey(tx, {
      tenantId,
      name: 'bench',
      scopes: TENANT_SCOPE_NAMES,
      actor: 'bench',
      constraints: null,
      issuerActor: 'bench',
      grant: true,
    });
    const planId = `plan_${ulid()}`;
    await tx.query(
      sql.unsafe`INSERT INTO quota.plans (id, tenant_id, name) VALUES (${planId}, ${tenantId}, 'bench')`,
    );
    const names: string[] = [];
    for (let i = 0; i < row.resources; i++) {
      const resourceId = `res_${ulid()}`;
      const policyId = `pol_${ulid()}`;
      names.push(`r${i}`);
      await tx.query(
        sql.unsafe`INSERT INTO quota.resources (id, tenant_id, name) VALUES (${resourceId}, ${tenantId}, ${`r${i}`})`,
      );
      await tx.query(sql.unsafe`
        INSERT INTO quota.policies (id, tenant_id, name, resource_id, kind, limit_amount, window_kind, enforcement_mode)
        VALUES (${policyId}, ${tenantId}, ${`p${i}`}, ${resourceId}, 'quota', 9007199254740991, 'lifetime', ${row.mode})`);
      await tx.query(
        sql.unsafe`INSERT INTO quota.plan_policies (plan_id, policy_id, position) VALUES (${planId}, ${policyId}, ${i})`,
      );
      for (let r = 1; r <= row.alertRules; r++)
        await tx.query(sql.unsafe`
          INSERT INTO quota.alert_rules (id, tenant_id, name, policy_id, threshold_pct)
          VALUES (${`alr_${ulid()}`}, ${tenantId}, ${`a${r}`}, ${policyId}, ${r * 10})`);
    }
    await tx.query(sql.unsafe`
      INSERT INTO quota.assignments (tenant_id, subject, plan_id)
      SELECT ${tenantId}, 's' || n, ${planId} FROM generate_series(1, ${subjects}) n`);
    return { token: key.key, names, subjects };
  });
}

/** One request of a row: its route, 1 of each of its resources, the next of its subjects. */
function decision(apiBase: string, row: Row, setup: Setup): () => Promise<Reply> {
  const headers = { ...JSON_HEADERS, authorization: `Bearer ${setup.token}` };
  const items = setup.names.map((resource) => ({ resource, amount: 1 }));
  let n = 0;
  return () => {
    const subject = `s${(n++ % setup.subjects) + 1}`;
    const key = row.keyed ? { idempotency_key: `k${n}-${ulid()}` } : {};
    return httpCall(
      apiBase,
      'POST',
      row.route,
      headers,
      JSON.stringify({ subject, items, ...key }),
    );
  };
}

type CpuProcess = 'api' | 'redis' | 'postgres' | 'loadgen';

const CONTENDED = '503 decision_contended';

interface Result {
  what: string;
  row?: Row;
  rate: number;
  /** pgbench reports only an average. */
  latencyMs: { p50: number; p99: number } | { average: number };
  errors: number;
  /** Of the errors, the answers 503 decision_contended (none for pgbench). */
  contended?: number;
  /** The other errors by kind (http-load.ts's failures), for the row's line. */
  otherErrors: string;
  /** µs per decision (per transaction for pgbench). */
  cpuUs: Partial<Record<CpuProcess, number>>;
  /** Who a CPU column stands for when not its usual process. */
  stands?: Partial<Record<CpuProcess, string>>;
}

const CPU_LABELS: Record<CpuProcess, string> = {
  api: 'API',
  redis: 'Redis',
  postgres: 'Postgres',
  loadgen: 'load generator',
};

/** How many clients, for how many seconds. */
interface Load {
  clients: number;
  seconds: number;
}

/**
 * Unmeasured load before each measured one, so that no row pays for the JIT, for opening pools or
 * for filling the catalogue cache (with 1 s the first strict row still paid ~1.5x the API CPU of
 * the rows after it).
 */
const WARMUP_SECONDS = 3;

/** `request` in a closed loop after a warm-up, with the CPU each process spent per answer below 300. */
async function loadRow<K extends CpuProcess>(
  what: string,
  readers: Record<K, () => number>,
  load: Load,
  request: () => Promise<Reply>,
): Promise<Result> {
  await closedLoop(load.clients, WARMUP_SECONDS, request);
  const { result: f, cpuUs } = await cpuPerUnit(
    readers,
    () => closedLoop(load.clients, load.seconds, request),
    (figures) => figures.ok,
  );
  const others = [...f.failures].filter(([kind]) => kind !== CONTENDED);
  return {
    what,
    rate: f.ok / f.seconds,
    latencyMs: { p50: percentile(f.latenciesMs, 50), p99: percentile(f.latenciesMs, 99) },
    errors: f.errors,
    contended: f.failures.get(CONTENDED) ?? 0,
    otherErrors: others.map(([kind, count]) => `${kind}: ${count}`).join(', '),
    cpuUs,
  };
}

/** pgbench's run, with the CPU each process spent per transaction (pgbench's as the load generator's). */
async function pgbenchRow(
  what: string,
  readers: Record<'redis' | 'postgres', () => number>,
  databaseUrl: string,
  load: Load,
): Promise<Result> {
  const { result, cpuUs } = await cpuPerUnit(
    { ...readers, loadgen: () => endedChildrenCpuMs(process.pid) },
    () => runPgbench(databaseUrl, load.clients, load.seconds),
    (figures) => figures.transactions,
  );
  await vacuumPgbench(databaseUrl);
  return {
    what,
    rate: result.tps,
    latencyMs: { average: result.latencyAvgMs },
    errors: result.failed,
    otherErrors: result.failed ? `failed transactions: ${result.failed}` : '',
    cpuUs,
    stands: { loadgen: 'pgbench' },
  };
}

/** The table's latency cell: "p50 / p99", or pgbench's average. */
function latencyCell({ latencyMs }: Result): string {
  return 'average' in latencyMs
    ? `avg ${latencyMs.average.toFixed(1)}`
    : `${latencyMs.p50.toFixed(1)} / ${latencyMs.p99.toFixed(1)}`;
}

function printResult(r: Result): void {
  const latency =
    'average' in r.latencyMs
      ? `latency avg ${r.latencyMs.average.toFixed(1)} ms`
      : `p50 ${r.latencyMs.p50.toFixed(1)} ms, p99 ${r.latencyMs.p99.toFixed(1)} ms`;
  const kinds = [r.contended === undefined ? '' : `${CONTENDED} ${r.contended}`, r.otherErrors];
  const detail = kinds.filter((kind) => kind !== '').join('; ');
  const errors = `errors ${r.errors}${detail ? ` (${detail})` : ''}`;
  const cpu = (Object.keys(CPU_LABELS) as CpuProcess[])
    .filter((p) => r.cpuUs[p] !== undefined)
    .map((p) => `${r.stands?.[p] ?? CPU_LABELS[p]} ${r.cpuUs[p]!.toFixed(0)}`)
    .join(', ');
  console.log(
    `${r.what.padEnd(32)} ${r.rate.toFixed(0).padStart(6)}/s  ${latency.padEnd(26)}  ${errors}  CPU µs/decision: ${cpu}`,
  );
}

/** The pid of the Redis server `redis` is connected to. */
async function redisPid(redis: Redis): Promise<number> {
  const pid = /^process_id:(\d+)/m.exec(await redis.info('server'))?.[1];
  if (!pid) throw new Error('INFO server names no process_id');
  return Number(pid);
}

/**
 * Each mode's baseline, measured just before its rows and just after them (the VM's speed drifts
 * by up to 2x within minutes): a row is read against the mean of the two.
 */
interface Baselines {
  floor: [Result, Result];
  pgbench: [Result, Result];
}

const meanRate = ([before, after]: [Result, Result]) => (before.rate + after.rate) / 2;

/** A row's ratio to its mode's baseline, and to the row it is also read against. */
function ratios(r: Result, baselines: Baselines, results: Result[]) {
  const row = r.row!;
  const baseline =
    row.mode === 'fast'
      ? {
          text: `floor mean ${meanRate(baselines.floor).toFixed(0)}/s`,
          rate: meanRate(baselines.floor),
        }
      : {
          text: `pgbench mean ${meanRate(baselines.pgbench).toFixed(0)} tps`,
          rate: meanRate(baselines.pgbench),
        };
  const other = results.find((o) => o.row?.name === row.against?.name);
  return {
    baseline: baseline.text,
    ofBaseline: (r.rate / baseline.rate).toFixed(2),
    ofOther: other && row.against ? `${(r.rate / other.rate).toFixed(2)} ${row.against.reads}` : '',
  };
}

function printRatios(results: Result[], baselines: Baselines): void {
  const pair = ([before, after]: [Result, Result], unit: string) =>
    `${before.rate.toFixed(0)}${unit} before, ${after.rate.toFixed(0)} after, mean ${meanRate([before, after]).toFixed(0)}`;
  console.log(
    `\nbaselines: pgbench ${pair(baselines.pgbench, ' tps')} the strict rows; floor ${pair(baselines.floor, '/s')} the fast rows`,
  );
  for (const r of results) {
    const { baseline, ofBaseline, ofOther } = ratios(r, baselines, results);
    console.log(
      `${r.what.padEnd(32)} ${ofBaseline} of the ${baseline}${ofOther ? `; ${ofOther}` : ''}`,
    );
  }
}

function printTable(results: Result[], baselines: Baselines): void {
  const us = (r: Result, p: CpuProcess) => r.cpuUs[p]?.toFixed(0) ?? '—';
  const line = (r: Result, ratio: string, baseline: string) =>
    `| ${r.what} | ${r.rate.toFixed(0)} | ${latencyCell(r)} | ${r.errors} / ${r.contended ?? '—'} | ${ratio} | ${baseline} | ${us(r, 'api')} / ${us(r, 'redis')} / ${us(r, 'postgres')} / ${us(r, 'loadgen')} |`;
  console.log(
    '\n| what | decisions/s | p50 / p99 ms | errors / 503 contended | ratio | baseline | CPU µs/decision API / Redis / Postgres / LG |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const r of baselines.pgbench)
    console.log(line(r, '—', '— (per transaction; LG column: pgbench)'));
  for (const r of baselines.floor) console.log(line(r, '—', '— (API column: the floor process)'));
  for (const r of results) {
    const { baseline, ofBaseline, ofOther } = ratios(r, baselines, results);
    console.log(line(r, ofOther ? `${ofBaseline}; ${ofOther}` : ofBaseline, baseline));
  }
}

function parseOptions() {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string' },
      clients: { type: 'string' },
      only: { type: 'string' },
      profile: { type: 'string' },
    },
  });
  return {
    load: { seconds: Number(values.seconds ?? 10), clients: Number(values.clients ?? 32) },
    rows: selectRows(values.only),
    profileDir: values.profile && path.resolve(values.profile),
  };
}

/** What the rows are measured with: the processes under test and how to read their CPU. */
interface Bench {
  load: Load;
  rows: Row[];
  databaseUrl: string;
  floor: { port: number; pid: number };
  api: { port: number; pid: number };
  setups: Map<Row, Setup>;
  redisPid: number;
  postmasterPid: number;
  /** Moves fast mode's ledger stream into Postgres, as the ledger-flush job does every 10 s. */
  flushLedger: () => Promise<number>;
}

/**
 * pgbench, the strict rows, pgbench again; the floor, the fast rows, the floor again: each
 * printed as measured.
 */
async function measureAll(
  bench: Bench,
): Promise<{ results: Result[]; baselines: Baselines; flushed: number }> {
  const { load, rows } = bench;
  const shared = {
    redis: () => processCpuMs(bench.redisPid) + endedChildrenCpuMs(bench.redisPid),
    postgres: () => processTreeCpuMs(bench.postmasterPid) + endedChildrenCpuMs(bench.postmasterPid),
  };
  const loadgen = () => {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1000;
  };
  let n = 0;
  const floor = async (when: string) => {
    const result = {
      ...(await loadRow(
        `floor (Koa + 1 Redis script), ${when}`,
        { ...shared, api: () => processCpuMs(bench.floor.pid), loadgen },
        load,
        () =>
          httpCall(
            `http://127.0.0.1:${bench.floor.port}`,
            'POST',
            '/',
            JSON_HEADERS,
            JSON.stringify({ subject: `s${(n++ % SUBJECTS) + 1}`, amount: 1 }),
          ),
      )),
      stands: { api: 'floor process' },
    };
    printResult(result);
    return result;
  };
  const pgbench = async (when: string) => {
    const result = await pgbenchRow(`pgbench tpcb-like, ${when}`, shared, bench.databaseUrl, load);
    printResult(result);
    return result;
  };
  const results: Result[] = [];
  let flushed = 0;
  const measure = async (row: Row) => {
    const readers = { ...shared, api: () => processCpuMs(bench.api.pid), loadgen };
    const call = decision(`http://127.0.0.1:${bench.api.port}`, row, bench.setups.get(row)!);
    const result = { ...(await loadRow(row.what, readers, load, call)), row };
    // Unmeasured: a stream left to grow across rows makes Redis rewrite its append-only file
    // during the later ones.
    flushed += await bench.flushLedger();
    printResult(result);
    results.push(result);
  };
  const bracketed = async (mode: Mode, baseline: (when: string) => Promise<Result>) => {
    const before = await baseline('before');
    for (const row of rows.filter((r) => r.mode === mode)) await measure(row);
    return [before, await baseline('after')] as [Result, Result];
  };
  const pgbenchPair = await bracketed('strict', pgbench);
  const baselines = { pgbench: pgbenchPair, floor: await bracketed('fast', floor) };
  return { results, baselines, flushed };
}

async function main(): Promise<void> {
  const { load, rows, profileDir } = parseOptions();
  loadStackEnv();
  const prefix = `bench-quota-${process.pid}-`;
  const env = {
    TEMPORAL_NAMESPACE: testNamespace(),
    TASK_QUEUE_PREFIX: prefix,
    QUOTA_JOB_SCHEDULES: 'false',
    LOG_LEVEL: 'warn',
  };
  const config = loadConfig({ ...process.env, ...env });
  await migrateAll(config.databaseUrl, createLogger('warn'));
  await preparePgbench(config.databaseUrl);
  const pool = await createDatabasePool(config, {
    applicationName: 'bench-quota',
    maximumPoolSize: 2,
  });
  const redis = await connectedRedis(config, 'quota:');
  let floor: ChildProcess | undefined;
  let api: ChildProcess | undefined;
  try {
    const floorPort = await freePort();
    floor = await startFloor(floorPort, env);
    const apiPort = await freePort();
    api = await startApiProcess({
      services: ['quota'],
      env: { ...env, QUOTA_PORT: String(apiPort) },
      logFile: API_LOG,
      readyUrls: [`http://127.0.0.1:${apiPort}/healthz`],
      nodeArgs: profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
    });
    const setups = new Map<Row, Setup>();
    for (const row of rows) setups.set(row, await provision(pool, prefix, row));
    console.log(
      `quota bench: ${load.clients} clients, ${load.seconds} s each after ${WARMUP_SECONDS} s unmeasured, ${SUBJECTS} subjects (hot rows: 1); rows ${rows.map((r) => r.name).join(', ')}`,
    );
    const flushLedger = async () =>
      (await flushLedgerStream({ pool, redis, taskQueuePrefix: config.taskQueuePrefix }))
        .flushed_events;
    const { results, baselines, flushed } = await measureAll({
      load,
      rows,
      databaseUrl: config.databaseUrl,
      floor: { port: floorPort, pid: floor.pid! },
      api: { port: apiPort, pid: api.pid! },
      setups,
      redisPid: await redisPid(redis),
      postmasterPid: await postmasterPid(pool),
      flushLedger,
    });
    printRatios(results, baselines);
    printTable(results, baselines);
    console.log(`\nflushed ${flushed} fast-mode ledger events into Postgres, after each row`);
  } finally {
    floor?.kill();
    if (api) await stopProcessGroup(api);
    await closeRedis(redis);
    await pool.end();
  }
  if (profileDir) console.log(`the API's CPU profile is in ${profileDir}`);
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
