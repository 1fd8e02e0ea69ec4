import fs from 'node:fs';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { createTemporalClient } from '../../../platform/temporal';
import { taskQueues } from '../../../contracts/shared/task-queues';
import { createDatabasePool, sql, type DatabasePool } from '../../../db/pool';
import { ledgerHoldSweepWorkflow } from '../../../workflows/ledger/hold';
import {
  RETENTION_BATCH_SIZE,
  runsRetentionPurgeWorkflow,
} from '../../../workflows/runs/retention';
import { IMAGE, config, newTenant } from '../runs/support';

/**
 * The background jobs operators see started by their schedules, run once each for real on the
 * test worker. With RECORD_RUN_HISTORIES=1 their histories are saved for the replay project
 * (every workflow type has one there: test/replay/histories.test.ts checks it).
 */
describe('background job workflows', () => {
  const temporal = createTemporalClient(config);
  const queues = taskQueues(config.taskQueuePrefix);
  let pool: DatabasePool;
  beforeAll(async () => {
    pool = await createDatabasePool(config, { applicationName: 'jobs-test', maximumPoolSize: 2 });
  });
  afterAll(async () => {
    await temporal.connection.close();
    await pool?.end();
  });

  const runOnce = async <T>(
    workflow: typeof ledgerHoldSweepWorkflow | typeof runsRetentionPurgeWorkflow,
    taskQueue: string,
    history: string,
  ): Promise<{ result: T; activities: number }> => {
    const handle = await temporal.workflow.start(workflow, {
      taskQueue,
      workflowId: `test-job/${workflow.name}/${Date.now()}`,
    });
    const result = (await handle.result()) as T;
    const activities = await activitiesScheduled(handle);
    if (process.env.RECORD_RUN_HISTORIES === '1')
      fs.writeFileSync(
        path.resolve(__dirname, '../../histories', history),
        historyToJSON(await handle.fetchHistory()),
      );
    return { result, activities };
  };

  it('when the hold sweep runs, then it ends with the holds it expired, those that failed, and whether more are due', async () => {
    const { result } = await runOnce<{ expired: number; failed: number; more: boolean }>(
      ledgerHoldSweepWorkflow,
      queues.ledger,
      'ledger/hold-sweep.json',
    );
    expect(result).toEqual({
      expired: expect.any(Number) as number,
      failed: 0,
      more: false,
    });
  });

  it('when more runs are past retention than one batch holds, then the purge loops batch after batch and deletes them all', async () => {
    // Two batches and one more: even a purge running meanwhile (another test's, the operators'
    // hourly one) cannot take so many that this execution's history has a single batch.
    const seeded = await seedExpiredRuns(pool, 2 * RETENTION_BATCH_SIZE + 1);
    const { result, activities } = await runOnce<{ deleted: number }>(
      runsRetentionPurgeWorkflow,
      queues.runs,
      'runs/retention-purge.json',
    );
    expect(result.deleted).toBeGreaterThan(RETENTION_BATCH_SIZE);
    expect(activities).toBeGreaterThanOrEqual(2);
    expect(await countRuns(pool, seeded)).toBe(0);
  }, 60_000);
});

/** Terminal runs of a fresh tenant, finished two days ago, kept for one: all due for the purge. */
async function seedExpiredRuns(pool: DatabasePool, count: number): Promise<string> {
  const { tenantId } = await newTenant(pool);
  await pool.query(
    sql.unsafe`UPDATE runs.tenant_quotas SET retention_days = 1 WHERE tenant_id = ${tenantId}`,
  );
  await pool.query(sql.unsafe`
    INSERT INTO runs.runs (track_id, tenant_id, state, image, submitted_at, eligible_start,
                           max_queue_seconds, cpu_limit, memory_limit_mb, timeout_seconds,
                           started_at, finished_at, exit_code)
    SELECT ${tenantId} || '-' || i, ${tenantId}, 'exited', ${IMAGE}, now() - interval '2 days',
           now() - interval '2 days', 60, 1, 64, 60, now() - interval '2 days',
           now() - interval '2 days', 0
    FROM generate_series(1, ${count}::int) AS i`);
  return tenantId;
}

async function countRuns(pool: DatabasePool, tenantId: string): Promise<number> {
  return (await pool.oneFirst(sql.unsafe`
    SELECT count(*)::int FROM runs.runs WHERE tenant_id = ${tenantId}`)) as number;
}

async function activitiesScheduled(handle: WorkflowHandle): Promise<number> {
  const { events } = await handle.fetchHistory();
  return (events ?? []).filter((e) => e.activityTaskScheduledEventAttributes).length;
}
