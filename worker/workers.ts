import { bundleWorkflowCode, NativeConnection, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Config } from '../api/platform/config';
import { taskQueues } from '../api/platform/temporal';
import type { DatabasePool } from '../db/pool';
import type { Docker } from '../activities/docker/client';
import { createHostClaimActivities } from '../activities/runs/host';
import { createSelfCheckActivities, createSelfCheckDockerActivities } from '../activities/runs/self-check';

export interface WorkerDeps {
  config: Config;
  connection: NativeConnection;
  pool: DatabasePool;
  docker: Docker;
  workflowBundle: WorkflowBundleWithSourceMap;
}

/** Bundles every workflow once; all workflow workers share the bundle. */
export function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath: require.resolve('../workflows'), logger: quietBundlerLogger });
}

const quietBundlerLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

/**
 * Which task queue hosts which workflows and activities. Postgres activities sit beside their
 * workflows; Docker activities sit on this host's own queue (see claimDockerHost).
 */
export async function createWorkers(deps: WorkerDeps): Promise<Worker[]> {
  const { config, connection, workflowBundle } = deps;
  const queues = taskQueues(config.taskQueuePrefix);
  const common = { connection, namespace: config.temporalNamespace, identity: `${config.workerId}/${process.pid}` };
  return Promise.all([
    Worker.create({
      ...common,
      taskQueue: queues.runs,
      workflowBundle,
      activities: { ...createSelfCheckActivities({ pool: deps.pool }) },
    }),
    Worker.create({
      ...common,
      taskQueue: queues.runsDockerAnyHost,
      activities: createHostClaimActivities({ workerId: config.workerId, taskQueuePrefix: config.taskQueuePrefix }),
    }),
    Worker.create({
      ...common,
      taskQueue: queues.runsDockerHost(config.workerId),
      activities: { ...createSelfCheckDockerActivities({ docker: deps.docker }) },
    }),
  ]);
}
