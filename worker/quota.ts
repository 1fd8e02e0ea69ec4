import type { WorkerOptions } from '@temporalio/worker';
import { taskQueues } from '../api/platform/temporal';
import { createQuotaBootstrapActivities } from '../activities/quota/bootstrap';
import type { WorkerDeps } from './workers';

/** The quota service's task queue: tenant bootstraps and their Postgres activities. */
export function quotaWorkerOptions(deps: WorkerDeps): Partial<WorkerOptions>[] {
  return [
    {
      taskQueue: taskQueues(deps.config.taskQueuePrefix).quota,
      workflowBundle: deps.workflowBundle,
      activities: { ...createQuotaBootstrapActivities({ pool: deps.pool }) },
    },
  ];
}
