/**
 * Quota benchmark (not a test): decisions per second and p50/p99 over HTTP, each beside the
 * floor measured in the same run on the same cores: a bare Koa endpoint making one Redis script
 * call (bench/lib/redis-floor.ts). Figures:
 *   1. floor: N clients in a closed loop against the bare endpoint;
 *   2. consume, strict and fast, 1 item and 5 items (5 resources, a policy each);
 *   3. consume, strict and fast, 1 item, with ten alert rules watching its policy (thresholds
 *      10% to 100%: each request is judged against all ten), as a ratio of the same without;
 *   each over 1,000 subjects, and as a ratio of the floor's rate. Fast mode's ledger entries go
 *   to the write-ahead stream; the bench flushes them into Postgres after its runs.
 * Usage: npm run bench:quota [-- --seconds 10 --clients 32]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../api/platform/config';
import { createLogger } from '../api/platform/logger';
import { insertNewKey } from '../api/quota/keys';
import { TENANT_SCOPE_NAMES } from '../api/quota/scopes';
import { ulid } from '../db/ids';
import { migrateAll } from '../db/migrate';
import { createDatabasePool, sql, type DatabasePool } from '../db/pool';
import { insertTenant, setBootstrapState } from '../db/quota/tenants';
import { closeRedis, connectedRedis } from '../db/redis';
import { flushLedgerStream } from '../api/quota/consumption/ledger-flush';
import { loadStackEnv } from '../test/support/stack-env';
import { testNamespace } from '../test/support/test-namespace';
import { closedLoop, httpCall, percentile, type LoadFigures } from './lib/http-load';
import { freePort } from '../test/support/throwaway-backends';

const REPO_ROOT = path.resolve(__dirname, '..');
const SUBJECTS = 1_000;

/** A process serving on `port` (answering GET `probe`), its output discarded. */
async function serve(args: string[], env: NodeJS.ProcessEnv, port: number, probe: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: 'ignore',
  });
  for (let i = 0; i < 300; i++) {
    const up = await fetch(`http://127.0.0.1:${port}${probe}`, {
      method: probe === '/' ? 'POST' : 'GET',
      body: probe === '/' ? '{"subject":"warm","amount":1}' : undefined,
    }).then(
      (r) => r.ok,
      () => false,
    );
    if (up) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`${args.join(' ')} did not start`);
}

/** A tenant with a key, n resources each under a lifetime quota, on one plan for every subject. */
async function provision(
  pool: DatabasePool,
  resources: number,
  prefix: string,
  mode: 'strict' | 'fast',
  alertRules = 0,
) {
  const tenantId = `ten_${ulid()}`;
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
    for (let i = 0; i < resources; i++) {
      const resourceId = `res_${ulid()}`;
      const policyId = `pol_${ulid()}`;
      names.push(`r${i}`);
      await tx.query(
        sql.unsafe`INSERT INTO quota.resources (id, tenant_id, name) VALUES (${resourceId}, ${tenantId}, ${`r${i}`})`,
      );
      await tx.query(sql.unsafe`
        INSERT INTO quota.policies (id, tenant_id, name, resource_id, kind, limit_amount, window_kind, enforcement_mode)
        VALUES (${policyId}, ${tenantId}, ${`p${i}`}, ${resourceId}, 'quota', 9007199254740991, 'lifetime', ${mode})`);
      await tx.query(
        sql.unsafe`INSERT INTO quota.plan_policies (plan_id, policy_id, position) VALUES (${planId}, ${policyId}, ${i})`,
      );
      for (let r = 1; r <= alertRules; r++)
        await tx.query(sql.unsafe`
          INSERT INTO quota.alert_rules (id, tenant_id, name, policy_id, threshold_pct)
          VALUES (${`alr_${ulid()}`}, ${tenantId}, ${`a${r}`}, ${policyId}, ${r * 10})`);
    }
    await tx.query(sql.unsafe`
      INSERT INTO quota.assignments (tenant_id, subject, plan_id)
      SELECT ${tenantId}, 's' || n, ${planId} FROM generate_series(1, ${SUBJECTS}) n`);
    return { token: key.key, names };
  });
}

function report(name: string, f: LoadFigures, floor?: number) {
  const rate = f.ok / f.seconds;
  const ratio = floor ? `  ${(rate / floor).toFixed(2)} of the floor` : '';
  console.log(
    `${name.padEnd(28)} ${rate.toFixed(0).padStart(6)}/s  p50 ${percentile(f.latenciesMs, 50).toFixed(1)} ms  p99 ${percentile(f.latenciesMs, 99).toFixed(1)} ms  errors ${f.errors}${ratio}`,
  );
  return rate;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { seconds: { type: 'string' }, clients: { type: 'string' } },
  });
  const seconds = Number(values.seconds ?? 10);
  const clients = Number(values.clients ?? 32);
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
  const pool = await createDatabasePool(config, {
    applicationName: 'bench-quota',
    maximumPoolSize: 2,
  });
  const children: ChildProcess[] = [];
  try {
    const floorPort = await freePort();
    children.push(
      await serve(['bench/lib/redis-floor.ts', String(floorPort)], env, floorPort, '/'),
    );
    const apiPort = await freePort();
    children.push(
      await serve(
        ['api/main.ts', 'quota'],
        { ...env, QUOTA_PORT: String(apiPort) },
        apiPort,
        '/healthz',
      ),
    );
    const setups = [
      ['consume strict, 1 item', await provision(pool, 1, prefix, 'strict')],
      ['consume strict, 5 items', await provision(pool, 5, prefix, 'strict')],
      ['consume fast, 1 item', await provision(pool, 1, prefix, 'fast')],
      ['consume fast, 5 items', await provision(pool, 5, prefix, 'fast')],
      ['strict, 1 item, 10 alert rules', await provision(pool, 1, prefix, 'strict', 10)],
      ['fast, 1 item, 10 alert rules', await provision(pool, 1, prefix, 'fast', 10)],
    ] as const;
    /** Each run's rate by name: the alert rows are read beside the same run without rules. */
    const rates = new Map<string, number>();
    let n = 0;
    const subject = () => `s${(n++ % SUBJECTS) + 1}`;
    const json = { 'content-type': 'application/json' };

    console.log(`quota bench: ${clients} clients, ${seconds} s each, ${SUBJECTS} subjects`);
    const floor = report(
      'floor (Koa + 1 Redis script)',
      await closedLoop(clients, seconds, () =>
        httpCall(
          `http://127.0.0.1:${floorPort}`,
          'POST',
          '/',
          json,
          JSON.stringify({ subject: subject(), amount: 1 }),
        ),
      ),
    );
    for (const [name, setup] of setups) {
      const headers = { ...json, authorization: `Bearer ${setup.token}` };
      const items = setup.names.map((resource) => ({ resource, amount: 1 }));
      const rate = report(
        name,
        await closedLoop(clients, seconds, () =>
          httpCall(
            `http://127.0.0.1:${apiPort}`,
            'POST',
            '/v1/consume',
            headers,
            JSON.stringify({ subject: subject(), items }),
          ),
        ),
        floor,
      );
      rates.set(name, rate);
    }
    for (const mode of ['strict', 'fast'])
      console.log(
        `${mode} with 10 alert rules: ${(rates.get(`${mode}, 1 item, 10 alert rules`)! / rates.get(`consume ${mode}, 1 item`)!).toFixed(2)} of the same without`,
      );
    const redis = await connectedRedis(config, 'quota:');
    const { flushed_events } = await flushLedgerStream({
      pool,
      redis,
      taskQueuePrefix: config.taskQueuePrefix,
    });
    console.log(`flushed ${flushed_events} fast-mode ledger events into Postgres`);
    await closeRedis(redis);
  } finally {
    for (const child of children) child.kill();
    await pool.end();
  }
}

void main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
