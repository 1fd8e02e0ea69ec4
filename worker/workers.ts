import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { payloadDataConverter } from '../platform/payload-codec';
import { runsWorkerOptions } from './runs';
import { ledgerWorkerOptions } from './ledger';
import { quotaWorkerOptions } from './quota';
import type { WorkerDeps } from './deps';

/** Bundles every workflow once; all workflow workers share the bundle. */
export function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    logger: quietBundlerLogger,
  });
}

const quietBundlerLogger = {
  log: () => {},
  trace: () => {},
  debug: () => {},
  info: () => {},
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

/** One Temporal worker per task queue that some service hosts on this machine. */
export async function createWorkers(deps: WorkerDeps): Promise<Worker[]> {
  const { config, connection } = deps;
  const common = {
    connection,
    namespace: config.temporalNamespace,
    identity: `${config.workerId}/${process.pid}`,
    dataConverter: payloadDataConverter(config.temporalPayloadKeys),
  };
  const perQueue = [
    ...runsWorkerOptions(deps),
    ...ledgerWorkerOptions(deps),
    ...quotaWorkerOptions(deps),
  ];
  return Promise.all(
    perQueue.map((options) =>
      Worker.create({ ...common, ...options, taskQueue: options.taskQueue! }),
    ),
  );
}
