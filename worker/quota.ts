import type { WorkerOptions } from '@temporalio/worker';
import { taskQueues } from '../contracts/shared/task-queues';
import { createQuotaBootstrapActivities } from '../activities/quota/bootstrap';
import { createQuotaJobActivities } from '../activities/quota/jobs';
import { createDeliveryActivities } from '../activities/shared/delivery';
import { createAlertMailActivities } from '../activities/quota/alert-mail';
import type { WorkerDeps } from './deps';

/** The quota service's task queue: tenant bootstraps, background jobs, their Postgres activities. */
export function quotaWorkerOptions(deps: WorkerDeps): Partial<WorkerOptions>[] {
  return [
    {
      taskQueue: taskQueues(deps.config.taskQueuePrefix).quota,
      workflowBundle: deps.workflowBundle,
      activities: {
        ...createQuotaBootstrapActivities({ pool: deps.pool }),
        // An alert's webhook deliveries (delivery/quota/<id>) run on this queue.
        ...createDeliveryActivities({ pool: deps.pool, config: deps.config }),
        // ...and its mails (alert-mail/<id>).
        ...createAlertMailActivities({ pool: deps.pool, config: deps.config }),
        ...createQuotaJobActivities({
          pool: deps.pool,
          redis: deps.quotaRedis,
          taskQueuePrefix: deps.config.taskQueuePrefix,
        }),
      },
    },
  ];
}
