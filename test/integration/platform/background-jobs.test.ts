import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { loadConfig } from '../../../api/platform/config';
import { createTemporalClient, taskQueues } from '../../../api/platform/temporal';
import { ledgerHoldSweepWorkflow } from '../../../workflows/ledger/hold';
import { runsRetentionPurgeWorkflow } from '../../../workflows/runs/retention';

/**
 * The background jobs operators see started by their schedules, run once each for real on the
 * test worker. With RECORD_RUN_HISTORIES=1 their histories are saved for the replay project
 * (every workflow type has one there: test/replay/histories.test.ts checks it).
 */
describe('background job workflows', () => {
  const config = loadConfig();
  const temporal = createTemporalClient(config);
  const queues = taskQueues(config.taskQueuePrefix);
  afterAll(() => temporal.connection.close());

  const runOnce = async <T>(
    workflow: typeof ledgerHoldSweepWorkflow | typeof runsRetentionPurgeWorkflow,
    taskQueue: string,
    history: string,
  ): Promise<T> => {
    const handle = await temporal.workflow.start(workflow, {
      taskQueue,
      workflowId: `test-job/${workflow.name}/${Date.now()}`,
    });
    const result = (await handle.result()) as T;
    if (process.env.RECORD_RUN_HISTORIES === '1')
      fs.writeFileSync(
        path.resolve(__dirname, '../../histories', history),
        historyToJSON(await handle.fetchHistory()),
      );
    return result;
  };

  it('when the hold sweep runs, then it ends with the holds it expired, those that failed, and whether more are due', async () => {
    const result = await runOnce<{ expired: number; failed: number; more: boolean }>(
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

  it('when the retention purge runs, then it ends with the number of runs it deleted', async () => {
    const result = await runOnce<{ deleted: number }>(
      runsRetentionPurgeWorkflow,
      queues.runs,
      'runs/retention-purge.json',
    );
    expect(Number.isInteger(result.deleted) && result.deleted >= 0).toBe(true);
  });
});
