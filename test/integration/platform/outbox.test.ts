import type { Client } from '@temporalio/client';
import { loadConfig } from '../../../platform/config';
import { createLogger } from '../../../platform/logger';
import {
  createOutboxDispatcher,
  type OutboxDispatcher,
  type OutboxLimits,
  type OutboxSource,
} from '../../../platform/outbox';
import { createTemporalClient } from '../../../platform/temporal';
import { createDatabasePool, sql, type DatabasePool } from '../../../db/pool';

/**
 * The platform's outbox dispatcher against real Postgres and Temporal: a scratch table of rows
 * that each ask for a workflow (on a task queue no worker polls: the executions only have to
 * exist), driven through outages and a crash between the start and its record.
 */
const config = loadConfig();
const logger = createLogger('silent');
const schema = `outbox_test_${process.pid}`;
const taskQueue = `${config.taskQueuePrefix}outbox-test`;
const workflowId = (key: string) => `outbox-test/${schema}/${key}`;

let pool: DatabasePool;
let temporal: Client;
let dispatchers: OutboxDispatcher<string>[] = [];

/**
 * Rows of the scratch table; `markStarted` can be made to fail, as a process dying would, and
 * `attempts` notes when each row's start was tried.
 */
function scratchSource(
  options: { recordFails?: boolean; attempts?: Map<string, number[]> } = {},
): OutboxSource<string> {
  return {
    name: 'outbox test',
    keyOf: (key) => key,
    due: async (limit, skip) =>
      (await pool.anyFirst(sql.unsafe`
        SELECT key FROM ${sql.identifier([schema, 'rows'])}
        WHERE started_at IS NULL AND NOT (key = ANY(${sql.array(skip, 'text')}))
        ORDER BY key LIMIT ${limit}`)) as string[],
    workflowOf: (key) => {
      options.attempts?.set(key, [...(options.attempts.get(key) ?? []), Date.now()]);
      return {
        workflowType: 'outboxTestWorkflow',
        options: { workflowId: workflowId(key), taskQueue, args: [] },
      };
    },
    markStarted: async (keys) => {
      if (options.recordFails) throw new Error('the process died before recording its starts');
      await pool.query(sql.unsafe`
        UPDATE ${sql.identifier([schema, 'rows'])} SET started_at = now()
        WHERE key = ANY(${sql.array(keys, 'text')})`);
    },
  };
}

function dispatcher(client: Client, source = scratchSource(), limits: Partial<OutboxLimits> = {}) {
  const made = createOutboxDispatcher({ temporal: client, logger }, source, {
    confirmFlushMs: 10,
    ...limits,
  });
  dispatchers.push(made);
  return made;
}

async function insertRows(keys: string[]) {
  await pool.query(sql.unsafe`
    INSERT INTO ${sql.identifier([schema, 'rows'])} (key)
    SELECT unnest(${sql.array(keys, 'text')})`);
}

const unstarted = async () =>
  Number(
    await pool.oneFirst(
      sql.unsafe`SELECT count(*) FROM ${sql.identifier([schema, 'rows'])} WHERE started_at IS NULL`,
    ),
  );

/** Executions Temporal holds per workflow id of these keys (closed ones included). */
async function executionsPerKey(keys: string[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const key of keys) {
    const { count } = await temporal.workflow.count(`WorkflowId = '${workflowId(key)}'`);
    counts[key] = count;
  }
  return counts;
}

const once = (keys: string[]) => Object.fromEntries(keys.map((key) => [key, 1]));

async function eventually(check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Visibility is eventually consistent: counts settle a moment after the starts. */
async function expectExecutionsOnce(keys: string[]) {
  await eventually(async () =>
    Object.values(await executionsPerKey(keys)).every((count) => count === 1),
  );
  expect(await executionsPerKey(keys)).toEqual(once(keys));
}

/** A client of a namespace that does not exist: every start fails, as with Temporal unreachable. */
async function withRefusingTemporal(use: (refusing: Client) => Promise<void>) {
  const refusing = createTemporalClient({ ...config, temporalNamespace: `missing-${schema}` });
  try {
    await use(refusing);
  } finally {
    await refusing.connection.close();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  pool = await createDatabasePool(config, { applicationName: 'outbox-test', maximumPoolSize: 4 });
  temporal = createTemporalClient(config);
  await pool.query(sql.unsafe`CREATE SCHEMA ${sql.identifier([schema])}`);
  await pool.query(
    sql.unsafe`CREATE TABLE ${sql.identifier([schema, 'rows'])} (key text PRIMARY KEY, started_at timestamptz)`,
  );
});

afterEach(async () => {
  await Promise.all(dispatchers.map((d) => d.stop()));
  dispatchers = [];
});

afterAll(async () => {
  const running = temporal.workflow.list({
    query: `TaskQueue = '${taskQueue}' AND ExecutionStatus = 'Running'`,
  });
  for await (const execution of running)
    await temporal.workflow.getHandle(execution.workflowId).terminate('outbox test done');
  await pool.query(sql.unsafe`DROP SCHEMA ${sql.identifier([schema])} CASCADE`);
  await pool.end();
  await temporal.connection.close();
});

describe('the outbox dispatcher', () => {
  it('when committed rows are enqueued and swept at once by two processes, then each row gets exactly one workflow and is recorded', async () => {
    const keys = Array.from({ length: 30 }, (_, i) => `a${String(i).padStart(2, '0')}`);
    await insertRows(keys);
    const first = dispatcher(temporal);
    const second = dispatcher(temporal);
    for (const key of keys) first.enqueue(key);
    await Promise.all([first.sweep(), second.sweep()]);
    await eventually(async () => (await unstarted()) === 0);
    await expectExecutionsOnce(keys);
  }, 60_000);

  it('when Temporal refuses the starts, then the rows wait unrecorded and the next sweep of a process that reaches it starts them', async () => {
    const keys = ['b1', 'b2', 'b3'];
    await insertRows(keys);
    await withRefusingTemporal(async (refusing) => {
      const down = dispatcher(refusing);
      await down.sweep();
      await down.stop();
      expect(await unstarted()).toBe(keys.length);
    });
    await dispatcher(temporal).sweep();
    await eventually(async () => (await unstarted()) === 0);
    await expectExecutionsOnce(keys);
  }, 60_000);

  it('when starts keep failing, then each row is tried again only after a delay that doubles up to its maximum, however often it is swept or enqueued', async () => {
    const keys = ['d1', 'd2', 'd3'];
    await insertRows(keys);
    const attempts = new Map<string, number[]>();
    const limits = { retryDelayMinMs: 200, retryDelayMaxMs: 800 };
    await withRefusingTemporal(async (refusing) => {
      const down = dispatcher(refusing, scratchSource({ attempts }), limits);
      const until = Date.now() + 3_000;
      while (Date.now() < until) {
        await down.sweep();
        for (const key of keys) down.enqueue(key); // requests nudging the same rows
        await sleep(50);
      }
      await down.stop();
    });
    expect(await unstarted()).toBe(keys.length);
    for (const key of keys) {
      const times = attempts.get(key)!;
      const gaps = times.slice(1).map((at, i) => at - times[i]!);
      const delays = gaps.map((_, i) => Math.min(200 * 2 ** i, 800));
      // 3 s of sweeps every 50 ms: ~60 tries without a delay; 200 + 400 + 800 + 800 ms allow 5.
      expect(times.length).toBeGreaterThanOrEqual(3);
      expect(times.length).toBeLessThanOrEqual(6);
      expect(gaps.map((gap, i) => Math.min(gap, delays[i]!))).toEqual(delays);
    }

    await dispatcher(temporal).sweep();
    await eventually(async () => (await unstarted()) === 0);
    await expectExecutionsOnce(keys);
  }, 60_000);

  it('when a process dies mid-drain (one row started, the others taken but not yet started, none recorded), then the next drain starts the rest and records all, each once', async () => {
    const keys = ['c1', 'c2', 'c3'];
    await insertRows(keys);
    const dying = dispatcher(temporal, scratchSource({ recordFails: true }), {
      startConcurrency: 1,
    });
    for (const key of keys) dying.enqueue(key);
    await dying.stop();
    expect(await unstarted()).toBe(keys.length);
    await eventually(async () => (await executionsPerKey(['c1'])).c1 === 1);
    expect(await executionsPerKey(keys)).toEqual({ c1: 1, c2: 0, c3: 0 });

    await dispatcher(temporal).sweep();
    await eventually(async () => (await unstarted()) === 0);
    await expectExecutionsOnce(keys);
  }, 60_000);
});
