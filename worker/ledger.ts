import type { WorkerOptions } from '@temporalio/worker';
import { taskQueues } from '../contracts/shared/task-queues';
import { createLedgerHoldActivities } from '../activities/ledger/holds';
import type { WorkerDeps } from './deps';

/** The ledger service's task queue: hold expiry workflows, the sweep, and their Postgres activities. */
export function ledgerWorkerOptions(deps: WorkerDeps): Partial<WorkerOptions>[] {
  return [
    {
      taskQueue: taskQueues(deps.config.taskQueuePrefix).ledger,
      workflowBundle: deps.workflowBundle,
      activities: { ...createLedgerHoldActivities({ pool: deps.pool }) },
    },
  ];
}
