import type { WorkerOptions } from '@temporalio/worker';
import { taskQueues } from '../api/platform/temporal';
import { createHostClaimActivities } from '../activities/runs/host';
import {
  createSelfCheckActivities,
  createSelfCheckDockerActivities,
} from '../activities/runs/self-check';
import { createRunActivities } from '../activities/runs/run';
import { createRunDockerActivities } from '../activities/runs/run-docker';
import { createRetentionActivities } from '../activities/runs/retention';
import { createReconcileActivities } from '../activities/runs/reconcile';
import type { WorkerDeps } from './workers';

/**
 * The runs service's task queues: its workflows with their Postgres activities; the
 * any-host queue where a Docker host claims work; this host's own Docker queue.
 */
export function runsWorkerOptions(deps: WorkerDeps): Partial<WorkerOptions>[] {
  const { config } = deps;
  const queues = taskQueues(config.taskQueuePrefix);
  // One set per process: both Docker queues share its pulls in flight (see PULL_FRESH_MS).
  const runDocker = createRunDockerActivities({
    docker: deps.docker,
    pool: deps.pool,
    redis: deps.redis,
    logDir: config.runs.logDir,
  });
  return [
    {
      taskQueue: queues.runs,
      workflowBundle: deps.workflowBundle,
      activities: {
        ...createSelfCheckActivities({ pool: deps.pool }),
        ...createRunActivities({ pool: deps.pool }),
        ...createRetentionActivities({
          pool: deps.pool,
          redis: deps.redis,
          logDir: config.runs.logDir,
        }),
        ...createReconcileActivities({ pool: deps.pool }),
      },
    },
    {
      taskQueue: queues.runsDockerAnyHost,
      activities: createHostClaimActivities({
        workerId: config.workerId,
        taskQueuePrefix: config.taskQueuePrefix,
        pool: deps.pool,
        launch: (input) => runDocker.launchRunContainer(input),
      }),
    },
    {
      taskQueue: queues.runsDockerHost(config.workerId),
      activities: {
        ...createSelfCheckDockerActivities({ docker: deps.docker }),
        ...runDocker,
      },
    },
  ];
}
