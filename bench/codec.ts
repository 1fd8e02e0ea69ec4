/**
 * Payload codec benchmark (not a test): what encrypting every Temporal payload
 * (platform/payload-codec.ts, AES-256-GCM under TEMPORAL_PAYLOAD_KEYS) costs a run and a
 * posting hold, as a ratio of the same work without it, both measured in the same bench run.
 *
 * Two setups side by side, each with its own worker process (test/support/worker-process.ts)
 * and its own API process (runs + ledger), on task queues of their own (`<id>-enc-`,
 * `<id>-clr-`) in the tests' Temporal namespace (the operators' `default` shows only real
 * executions): "with codec" under a fresh random key (`bench:<base64 of 32 bytes>`), "without"
 * with TEMPORAL_PAYLOAD_KEYS empty (payloads in clear). Their batches alternate (with, without;
 * then without, with; ...) so that the machine's drift (up to 2x between hours here) falls on
 * both alike. For each setup it prints the wall time per item and the CPU per item of its API
 * and worker processes (each with its children: /proc), and the ratio with / without:
 *  1. runs: batches of trivial runs (`true` on $REGISTRY_ADDRESS/busybox:latest), a few at a
 *     time, each from submit to its `run/<track_id>` execution's end;
 *  2. posting holds: batches of holds (POST /v1/transactions, pending, an hour to expiry), each
 *     placed, its `ledger-hold/<transaction_id>` execution started (the outbox row dispatched),
 *     committed, and its execution ended (the settle signal: `settled`).
 * The end-to-end ratio is the noisy figure: the codec is small beside the rest of a run. The
 * precise one is direct: the encrypted setup's histories are fetched by a client without a codec
 * (raw payloads, as Temporal stores them), and the codec decodes every encrypted payload and
 * encodes the clear result again, in this process, pass after pass: µs of codec CPU per item and
 * its bytes, printed as a share of the CPU per item without the codec.
 * Never asserts a timing. Stops its processes, terminates whatever of its queues is still running
 * and closes its pools before it exits.
 *
 * Usage: npm run bench:codec
 *   BENCH_CODEC_PHASES=runs,holds        which figures (both by default)
 *   BENCH_CODEC_BATCHES=4                batches per setup, alternating
 *   BENCH_CODEC_RUNS=10                  runs per batch, BENCH_CODEC_RUN_CONCURRENCY=2 at a time
 *   BENCH_CODEC_HOLDS=40                 holds per batch, BENCH_CODEC_HOLD_CONCURRENCY=4 at a time
 *   BENCH_CODEC_DIRECT_MS=2000           CPU spent on the in-process codec figure, per phase
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import { ulid } from 'ulid';
import { v7 as uuidv7 } from 'uuid';
import { loadConfig } from '../platform/config';
import { temporalConnectionOptions } from '../platform/temporal';
import { createLogger } from '../platform/logger';
import {
  EncryptionCodec,
  parsePayloadKeys,
  payloadDataConverter,
  type PayloadKey,
} from '../platform/payload-codec';
import { issueKey } from '../services/ledger/credentials';
import { createDatabasePool, sql, type DatabasePool } from '../db/pool';
import { migrateAll } from '../db/migrate';
import { withSystem } from '../db/ledger/context';
import { insertTenant } from '../db/ledger/tenants';
import { holdWorkflowId } from '../contracts/ledger/hold';
import { runWorkflowId } from '../contracts/runs/run';
import { loadStackEnv } from '../test/support/stack-env';
import { testNamespace } from '../test/support/test-namespace';
import { startWorkerProcess } from '../test/support/worker-process';
import { freePort, startApiProcess, stopProcessGroup } from '../test/support/api-process';
import { codecCost, encryptedPayloadGroups, type CodecCost } from './lib/codec-cost';
import { HostCpu } from './lib/host-cpu';
import { httpCall, type Reply } from './lib/http-load';
import { machineSpeedMs } from './lib/machine-speed';
import { processTreeCpuMs } from './lib/process-tree-cpu';
import { benchRunsTenant } from './lib/runs-tenant';

const positive = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name}: a positive integer`);
  return value;
};
const PHASES = new Set((process.env.BENCH_CODEC_PHASES ?? 'runs,holds').split(','));
const BATCHES = positive('BENCH_CODEC_BATCHES', 4);
const RUNS_PER_BATCH = positive('BENCH_CODEC_RUNS', 10);
const RUN_CONCURRENCY = positive('BENCH_CODEC_RUN_CONCURRENCY', 2);
const HOLDS_PER_BATCH = positive('BENCH_CODEC_HOLDS', 40);
const HOLD_CONCURRENCY = positive('BENCH_CODEC_HOLD_CONCURRENCY', 4);
const DIRECT_CPU_MS = positive('BENCH_CODEC_DIRECT_MS', 2000);
/** Not measured: a fresh process compiles its paths first, and the image is pulled once. */
const WARMUP_RUNS = 2;
const WARMUP_HOLDS = 8;
const ITEM_TIMEOUT_MS = 120_000;
const LEDGER_ACCOUNTS = 8;

type Label = 'with codec' | 'without';

interface Setup {
  label: Label;
  prefix: string;
  /** Its own data converter: a result is read as its worker wrote it. */
  client: Client;
  api: ChildProcess;
  worker: ChildProcess;
  runsUrl: string;
  ledgerUrl: string;
  runsHeaders: Record<string, string>;
  ledger: { poster: string; accounts: string[] };
}

interface Item {
  /** The workflow id of its execution; null when it failed before one had an id. */
  workflowId: string | null;
  ok: boolean;
  latencyMs: number;
  error?: string;
}

interface Batch {
  label: Label;
  items: Item[];
  wallMs: number;
  apiCpuMs: number;
  workerCpuMs: number;
  busyShare: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const load1 = () => os.loadavg()[0]!.toFixed(1);
const fixed = (n: number, digits = 1) =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
    : 'n/a';

/** `n` calls of `one`, `concurrency` at a time. */
async function lanes<T>(n: number, concurrency: number, one: () => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, concurrency) }, async () => {
      while (next < n) {
        next++;
        results.push(await one());
      }
    }),
  );
  return results;
}

/** The execution's result once it ends; its start may still be on its way from the API. */
async function workflowResult(client: Client, workflowId: string): Promise<unknown> {
  const deadline = Date.now() + ITEM_TIMEOUT_MS;
  for (;;) {
    try {
      return await client.workflow.getHandle(workflowId).result();
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError) || Date.now() > deadline) throw error;
      await sleep(25);
    }
  }
}

/** One batch of one setup: the wall time, and the CPU its API and worker processes spent. */
async function measureBatch(
  setup: Setup,
  n: number,
  concurrency: number,
  one: (setup: Setup) => Promise<Item>,
): Promise<Batch> {
  const host = new HostCpu();
  host.start(100);
  const api0 = processTreeCpuMs(setup.api.pid!);
  const worker0 = processTreeCpuMs(setup.worker.pid!);
  const t0 = performance.now();
  const items = await lanes(n, concurrency, () =>
    one(setup).catch((error: unknown): Item => ({
      workflowId: null,
      ok: false,
      latencyMs: NaN,
      error: error instanceof Error ? error.message : String(error),
    })),
  );
  const wallMs = performance.now() - t0;
  const apiCpuMs = processTreeCpuMs(setup.api.pid!) - api0;
  const workerCpuMs = processTreeCpuMs(setup.worker.pid!) - worker0;
  host.stop();
  return { label: setup.label, items, wallMs, apiCpuMs, workerCpuMs, busyShare: host.busyShare() };
}

interface Totals {
  items: number;
  ok: number;
  wallMsPerItem: number;
  meanLatencyMs: number;
  apiCpuMsPerItem: number;
  workerCpuMsPerItem: number;
  cpuMsPerItem: number;
}

function totals(batches: Batch[]): Totals {
  const items = batches.flatMap((b) => b.items);
  const ok = items.filter((i) => i.ok);
  const per = (ms: number) => ms / Math.max(1, ok.length);
  const apiCpu = batches.reduce((s, b) => s + b.apiCpuMs, 0);
  const workerCpu = batches.reduce((s, b) => s + b.workerCpuMs, 0);
  return {
    items: items.length,
    ok: ok.length,
    wallMsPerItem: per(batches.reduce((s, b) => s + b.wallMs, 0)),
    meanLatencyMs: per(ok.reduce((s, i) => s + i.latencyMs, 0)),
    apiCpuMsPerItem: per(apiCpu),
    workerCpuMsPerItem: per(workerCpu),
    cpuMsPerItem: per(apiCpu + workerCpu),
  };
}

function batchLine(phase: string, index: number, b: Batch): string {
  const t = totals([b]);
  const failed = b.items.filter((i) => !i.ok);
  const firstError = failed.find((i) => i.error)?.error;
  return (
    `${phase.padEnd(6)}batch ${index + 1}/${BATCHES} ${b.label.padEnd(11)} ${t.ok}/${t.items} ok in ${fixed(b.wallMs / 1000, 2)} s: ` +
    `${fixed(t.wallMsPerItem, 0)} ms each, mean latency ${fixed(t.meanLatencyMs, 0)} ms; ` +
    `CPU each API ${fixed(t.apiCpuMsPerItem, 2)} + worker ${fixed(t.workerCpuMsPerItem, 2)} ms; ` +
    `machine ${fixed(b.busyShare * 100, 0)}% busy, load ${load1()}` +
    (failed.length > 0 ? `; ${failed.length} failed${firstError ? ` (${firstError})` : ''}` : '')
  );
}

interface PhaseResult {
  phase: string;
  unit: string;
  batches: Batch[];
  direct: CodecCost | null;
  /** Encrypted payloads found in the histories of the setup without the codec (should be none). */
  clearSetupEncrypted: number;
}

/**
 * Both setups, alternating batch by batch (ABBA...), after a warm-up batch of each; then the
 * direct codec figure over the encrypted setup's histories.
 */
async function phase(options: {
  name: string;
  unit: string;
  setups: [Setup, Setup];
  perBatch: number;
  warmup: number;
  concurrency: number;
  one: (setup: Setup) => Promise<Item>;
  /** Marks items not ok that the batch's own check finds wrong (e.g. a run not exited). */
  check?: (items: Item[]) => Promise<void>;
  historiesClient: Client;
  keys: PayloadKey[];
}): Promise<PhaseResult> {
  const [withCodec, without] = options.setups;
  for (const setup of options.setups)
    await measureBatch(setup, options.warmup, options.concurrency, options.one);
  const batches: Batch[] = [];
  for (let i = 0; i < BATCHES; i++) {
    for (const setup of i % 2 === 0 ? [withCodec, without] : [without, withCodec]) {
      const batch = await measureBatch(setup, options.perBatch, options.concurrency, options.one);
      await options.check?.(batch.items);
      batches.push(batch);
      console.log(batchLine(options.name, i, batch));
    }
  }
  const histories = async (setup: Label, most = Infinity) => {
    const ids = batches
      .filter((b) => b.label === setup)
      .flatMap((b) => b.items)
      .filter((item) => item.ok && item.workflowId !== null)
      .map((item) => item.workflowId!)
      .slice(0, most);
    return lanes(ids.length, 4, async () => {
      const id = ids.pop()!;
      return encryptedPayloadGroups(
        await options.historiesClient.workflow.getHandle(id).fetchHistory(),
      );
    });
  };
  const sealed = await histories('with codec');
  // A sample of the other setup's: it should hold no encrypted payload at all.
  const clear = await histories('without', 5);
  const direct =
    sealed.length > 0
      ? await codecCost(new EncryptionCodec(options.keys), sealed, DIRECT_CPU_MS)
      : null;
  return {
    phase: options.name,
    unit: options.unit,
    batches,
    direct,
    clearSetupEncrypted: clear.flat(2).length,
  };
}

function report(results: PhaseResult[]): void {
  const head =
    `${''.padEnd(18)}${'items'.padStart(6)}${'wall/item'.padStart(12)}${'latency'.padStart(11)}` +
    `   CPU/item: API + worker = total      codec direct (decode + encode)`;
  console.log(
    `\nper item, both setups' own API and worker processes (each with its children); latency: mean from submit or post to the execution's end`,
  );
  console.log(head);
  for (const r of results) {
    const by = (label: Label) => totals(r.batches.filter((b) => b.label === label));
    const without = by('without');
    const withCodec = by('with codec');
    const row = (label: string, t: Totals, extra = '') =>
      console.log(
        `${`${r.phase} ${label}`.padEnd(18)}${`${t.ok}`.padStart(6)}${`${fixed(t.wallMsPerItem, 0)} ms`.padStart(12)}${`${fixed(t.meanLatencyMs, 0)} ms`.padStart(11)}` +
          `   ${`${fixed(t.apiCpuMsPerItem, 2)} + ${fixed(t.workerCpuMsPerItem, 2)} = ${fixed(t.cpuMsPerItem, 2)} ms`.padEnd(33)}${extra}`,
      );
    const d = r.direct;
    row('without', without);
    row(
      'with codec',
      withCodec,
      d
        ? `${fixed(d.decodeUs + d.encodeUs, 0)} µs (${fixed(d.decodeUs, 0)} + ${fixed(d.encodeUs, 0)}) per ${r.unit}; ${fixed(d.payloadsPerItem, 1)} payloads, ${fixed(d.clearBytesPerItem, 0)} → ${fixed(d.sealedBytesPerItem, 0)} bytes`
        : 'no encrypted history read',
    );
    // Each batch against its neighbour of the other setup (pairs taken in the order they ran).
    const pairs: { wall: number; cpu: number }[] = [];
    for (let i = 0; i + 1 < r.batches.length; i += 2) {
      const a = totals([r.batches[i]!]);
      const b = totals([r.batches[i + 1]!]);
      const [w, o] = r.batches[i]!.label === 'with codec' ? [a, b] : [b, a];
      pairs.push({ wall: w.wallMsPerItem / o.wallMsPerItem, cpu: w.cpuMsPerItem / o.cpuMsPerItem });
    }
    const range = (xs: number[]) => `${fixed(Math.min(...xs), 2)}–${fixed(Math.max(...xs), 2)}`;
    const share = d ? (d.decodeUs + d.encodeUs) / 1000 / without.cpuMsPerItem : NaN;
    console.log(
      `${`${r.phase} with / without`.padEnd(18)}${''.padStart(6)}${fixed(withCodec.wallMsPerItem / without.wallMsPerItem, 2).padStart(12)}${fixed(withCodec.meanLatencyMs / without.meanLatencyMs, 2).padStart(11)}` +
        `   ${fixed(withCodec.cpuMsPerItem / without.cpuMsPerItem, 2).padEnd(33)}${d ? `${fixed(share * 100, 2)}% of the CPU per ${r.unit} without` : ''}`,
    );
    console.log(
      `${''.padEnd(18)}batch pairs: wall ${range(pairs.map((p) => p.wall))}, CPU ${range(pairs.map((p) => p.cpu))}; ` +
        `CPU with − without ${fixed(withCodec.cpuMsPerItem - without.cpuMsPerItem, 2)} ms per ${r.unit} end to end` +
        (d
          ? ` (direct: ${fixed((d.decodeUs + d.encodeUs) / 1000, 3)} ms over ${d.passes} passes)`
          : '') +
        `; encrypted payloads in the histories without the codec: ${r.clearSetupEncrypted}`,
    );
  }
}

async function main(): Promise<void> {
  loadStackEnv();
  const id = `bench-${ulid().toLowerCase().slice(-8)}`;
  const base = {
    TEMPORAL_NAMESPACE: testNamespace(),
    RUNS_RATE_LIMIT_REQUESTS: '1000000',
    RUNS_RETENTION_SCHEDULE: 'false',
    LEDGER_HOLD_SWEEP_SCHEDULE: 'false',
    // One client on one address: widen the ledger's edge, lift its monthly quota (bench/ledger.ts).
    LEDGER_EDGE_RATE_PER_SECOND: '1000000',
    LEDGER_EDGE_BURST: '1000000',
    LEDGER_MONTHLY_CALL_QUOTA: '1000000000',
    LOG_LEVEL: 'warn',
  };
  Object.assign(process.env, { TEMPORAL_NAMESPACE: base.TEMPORAL_NAMESPACE });
  const config = loadConfig();
  await migrateAll(config.databaseUrl, createLogger('warn'));
  const pool = await createDatabasePool(config, {
    applicationName: 'bench-codec',
    maximumPoolSize: 6,
  });
  const benchKeys = `bench:${randomBytes(32).toString('base64')}`;
  const keys = parsePayloadKeys(benchKeys) as PayloadKey[];
  const connection = await Connection.connect(temporalConnectionOptions(config));
  const namespace = config.temporalNamespace;
  const encClient = new Client({
    connection,
    namespace,
    dataConverter: payloadDataConverter(keys),
  });
  // No codec: the "without" setup's results, and every history as Temporal stores it.
  const plainClient = new Client({ connection, namespace });
  const children: ChildProcess[] = [];
  const log = (name: string) => path.resolve('.data', 'logs', `${id}-${name}.log`);
  const image = `${config.registryAddress}/busybox:latest`;
  const speedBefore = machineSpeedMs();

  const startSetup = async (label: Label): Promise<Setup> => {
    const tag = label === 'with codec' ? 'enc' : 'clr';
    const prefix = `${id}-${tag}-`;
    const env = {
      ...base,
      TASK_QUEUE_PREFIX: prefix,
      WORKER_ID: `${id}-${tag}`,
      TEMPORAL_PAYLOAD_KEYS: label === 'with codec' ? benchKeys : '',
    };
    const [runsPort, ledgerPort] = [await freePort(), await freePort()];
    const runsUrl = `http://127.0.0.1:${runsPort}`;
    const ledgerUrl = `http://127.0.0.1:${ledgerPort}`;
    const worker = await startWorkerProcess(env, log(`${tag}-worker`), { detached: true });
    children.push(worker);
    const api = await startApiProcess({
      services: ['runs', 'ledger'],
      env: { ...env, RUNS_PORT: String(runsPort), LEDGER_PORT: String(ledgerPort) },
      logFile: log(`${tag}-api`),
      readyUrls: [`${runsUrl}/ping`, `${ledgerUrl}/healthz`],
    });
    children.push(api);
    return {
      label,
      prefix,
      client: label === 'with codec' ? encClient : plainClient,
      api,
      worker,
      runsUrl,
      ledgerUrl,
      runsHeaders: await provisionRuns(pool, runsUrl),
      ledger: await provisionLedger(pool, ledgerUrl),
    };
  };

  try {
    console.log(
      `codec bench (${id}; ${os.cpus().length} CPUs; ${BATCHES} batches per setup, alternating; load average at start ${load1()}; ` +
        `machine speed: 100,000 SHA-256 digests in ${fixed(speedBefore, 0)} ms on one core)`,
    );
    const withCodec = await startSetup('with codec');
    const without = await startSetup('without');
    const setups: [Setup, Setup] = [withCodec, without];
    console.log(`setups up: API + worker each (logs .data/logs/${id}-*.log); load ${load1()}`);
    const results: PhaseResult[] = [];

    if (PHASES.has('runs')) {
      const body = JSON.stringify({ image, command: ['true'] });
      results.push(
        await phase({
          name: 'runs',
          unit: 'run',
          setups,
          perBatch: RUNS_PER_BATCH,
          warmup: WARMUP_RUNS,
          concurrency: RUN_CONCURRENCY,
          historiesClient: plainClient,
          keys,
          one: async (setup) => {
            const t0 = performance.now();
            const reply = await httpCall(
              setup.runsUrl,
              'POST',
              '/api/v1/runs',
              setup.runsHeaders,
              body,
            );
            if (reply.status !== 202) throw new Error(`submit answered ${reply.status}`);
            const workflowId = runWorkflowId((reply.json() as { track_id: string }).track_id);
            await workflowResult(setup.client, workflowId);
            return { workflowId, ok: true, latencyMs: performance.now() - t0 };
          },
          check: async (items) => {
            const trackIds = items
              .filter((i) => i.workflowId !== null)
              .map((i) => i.workflowId!.slice('run/'.length));
            const exited = new Set(
              (await pool.anyFirst(sql.unsafe`
                SELECT track_id FROM runs.runs
                WHERE track_id = ANY(${sql.array(trackIds, 'text')}) AND state = 'exited'`)) as string[],
            );
            for (const item of items)
              if (item.ok && !exited.has(item.workflowId!.slice('run/'.length))) {
                item.ok = false;
                item.error = 'run did not exit 0';
              }
          },
        }),
      );
    }

    if (PHASES.has('holds')) {
      let idempotency = 0;
      const call = (setup: Setup, route: string, body?: unknown): Promise<Reply> =>
        httpCall(
          setup.ledgerUrl,
          'POST',
          route,
          {
            authorization: `Bearer ${setup.ledger.poster}`,
            'content-type': 'application/json',
            'idempotency-key': `${id}-${++idempotency}`,
          },
          body === undefined ? undefined : JSON.stringify(body),
        );
      results.push(
        await phase({
          name: 'holds',
          unit: 'hold',
          setups,
          perBatch: HOLDS_PER_BATCH,
          warmup: WARMUP_HOLDS,
          concurrency: HOLD_CONCURRENCY,
          historiesClient: plainClient,
          keys,
          one: async (setup) => {
            const { accounts } = setup.ledger;
            const from = Math.floor(Math.random() * accounts.length);
            const to =
              (from + 1 + Math.floor(Math.random() * (accounts.length - 1))) % accounts.length;
            const t0 = performance.now();
            const posted = await call(setup, '/v1/transactions', {
              pending: true,
              expires_at: new Date(Date.now() + 3_600_000).toISOString(),
              entries: [
                { account_id: accounts[from], direction: 'debit', amount: '0.01' },
                { account_id: accounts[to], direction: 'credit', amount: '0.01' },
              ],
            });
            if (posted.status !== 201) throw new Error(`hold answered ${posted.status}`);
            const transactionId = (posted.json() as { transaction_id: string }).transaction_id;
            const workflowId = holdWorkflowId(transactionId);
            // Committed before its execution starts, a hold would need none: wait for the start.
            await waitHoldDispatched(pool, transactionId);
            const committed = await call(setup, `/v1/transactions/${transactionId}/commit`);
            if (committed.status !== 200) throw new Error(`commit answered ${committed.status}`);
            const outcome = await workflowResult(setup.client, workflowId);
            return {
              workflowId,
              ok: outcome === 'settled',
              latencyMs: performance.now() - t0,
              ...(outcome === 'settled' ? {} : { error: `hold ended ${String(outcome)}` }),
            };
          },
        }),
      );
    }

    report(results);
    console.log(
      `\nmachine speed after: 100,000 SHA-256 digests in ${fixed(machineSpeedMs(), 0)} ms (before: ${fixed(speedBefore, 0)} ms); load ${load1()}`,
    );
  } finally {
    // Whatever of this bench's queues still runs (a hold whose commit failed waits an hour).
    let terminated = 0;
    try {
      for await (const execution of encClient.workflow.list({
        query: `ExecutionStatus="Running" AND TaskQueue STARTS_WITH "${id}-"`,
      })) {
        await encClient.workflow
          .getHandle(execution.workflowId, execution.runId)
          .terminate('the codec bench that started it is over')
          .then(
            () => terminated++,
            () => undefined, // ended meanwhile
          );
      }
    } catch (error) {
      console.error('listing what the bench left running failed:', error);
    }
    if (terminated > 0) console.log(`terminated ${terminated} executions left running`);
    await Promise.all(children.reverse().map((child) => stopProcessGroup(child)));
    await connection.close();
    await pool.end();
  }
}

/** A runs tenant with a key for submitting, and quotas no batch reaches. */
async function provisionRuns(pool: DatabasePool, runsUrl: string): Promise<Record<string, string>> {
  const { key } = await benchRunsTenant(pool, [
    'svc_run_submit',
    'svc_run_read',
    'svc_tenant_admin',
  ]);
  const headers = {
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
  };
  const quotas = await fetch(`${runsUrl}/api/v1/tenant/quotas`, {
    method: 'PUT',
    headers,
    body: JSON.stringify({ max_concurrent_runs: 20, max_daily_runs: 1_000_000 }),
  });
  if (!quotas.ok) throw new Error(`runs quotas answered ${quotas.status}: ${await quotas.text()}`);
  return headers;
}

/** A ledger tenant (as bench/ledger.ts makes one), an asset and accounts without floors. */
async function provisionLedger(
  pool: DatabasePool,
  ledgerUrl: string,
): Promise<{ poster: string; accounts: string[] }> {
  const tenantId = uuidv7();
  const keys = await withSystem(pool, async (tx) => {
    await insertTenant(tx, {
      tenantId,
      parentId: null,
      name: 'bench codec',
      kind: 'sandbox',
      contactEmail: null,
    });
    const issue = (role: 'ledger_admin' | 'ledger_poster') =>
      issueKey(tx, { tenantId, role, label: 'bench codec', ttlDays: 1 });
    return {
      admin: (await issue('ledger_admin')).secret,
      poster: (await issue('ledger_poster')).secret,
    };
  });
  let n = 0;
  const admin = async (route: string, body: unknown) => {
    const reply = await httpCall(
      ledgerUrl,
      'POST',
      route,
      {
        authorization: `Bearer ${keys.admin}`,
        'content-type': 'application/json',
        'idempotency-key': `${tenantId}-${++n}`,
      },
      JSON.stringify(body),
    );
    if (reply.status !== 201) throw new Error(`${route} answered ${reply.status}`);
    return reply.json() as Record<string, string>;
  };
  const asset = await admin('/v1/asset-types', { code: 'USD', kind: 'fiat', scale: 2 });
  const accounts: string[] = [];
  for (let i = 0; i < LEDGER_ACCOUNTS; i++)
    accounts.push(
      (
        await admin('/v1/accounts', {
          asset_type_id: asset.asset_type_id,
          normal_side: 'credit',
          balance_floor: null,
        })
      ).account_id!,
    );
  return { poster: keys.poster, accounts };
}

/** The hold's outbox row marked dispatched: its execution has started. */
async function waitHoldDispatched(pool: DatabasePool, transactionId: string): Promise<void> {
  const deadline = Date.now() + ITEM_TIMEOUT_MS;
  for (;;) {
    const dispatched: unknown = await withSystem(pool, (tx) =>
      tx.maybeOneFirst(sql.unsafe`
        SELECT dispatched_at IS NOT NULL FROM ledger.hold_outbox WHERE transaction_id = ${transactionId}`),
    );
    if (dispatched === true) return;
    if (Date.now() > deadline) throw new Error(`hold ${transactionId} not dispatched in time`);
    await sleep(20);
  }
}

main().catch((error: unknown) => {
  console.error('bench failed:', error);
  process.exit(1);
});
