import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { loadConfig } from '../api/platform/config';
import { createLogger } from '../api/platform/logger';
import { createDatabasePool } from '../db/pool';
import { createDocker } from '../activities/docker/client';
import { createRedis } from '../db/redis';
import { bundleWorkflows, createWorkers } from './workers';

/** The Temporal worker process: hosts every task queue of this host until SIGINT/SIGTERM. */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, { process: 'worker', workerId: config.workerId });
  Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: ['SIGINT', 'SIGTERM'] });

  const pool = await createDatabasePool(config, { applicationName: 'worker' });
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const workflowBundle = await bundleWorkflows();
  const redis = createRedis(config, '');
  const workers = await createWorkers({
    config,
    connection,
    pool,
    redis,
    docker: createDocker(config),
    workflowBundle,
  });
  logger.info({ taskQueues: workers.map((w) => w.options.taskQueue) }, 'worker polling');
  try {
    await Promise.all(workers.map((w) => w.run()));
  } finally {
    await connection.close();
    await pool.end();
    redis.disconnect();
    logger.info('worker stopped');
  }
}

main().catch((error: unknown) => {
  console.error('worker failed:', error);
  process.exit(1);
});
