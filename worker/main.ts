// First: tracing, when wanted, patches the modules the others load.
import '../platform/tracing-register';
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { makeTelemetryFilterString, NativeConnection, Runtime } from '@temporalio/worker';
import { loadConfig } from '../platform/config';
import { temporalConnectionOptions } from '../platform/temporal';
import { createLogger } from '../platform/logger';
import { createDatabasePool } from '../db/pool';
import { createDocker } from '../platform/docker';
import { createRedis } from '../db/redis';
import { bundleWorkflows, createWorkers } from './workers';
import { startDockerHostPresence } from './runs';
import { temporalLogger } from './temporal-logger';
import { prepareWorkerMetrics } from './metrics';
import { stopTracing } from '../platform/tracing';

/** The Temporal worker process: hosts every task queue of this host until SIGINT/SIGTERM. */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, { process: 'worker', workerId: config.workerId });
  const metrics = await prepareWorkerMetrics({ worker_id: config.workerId }, logger);
  Runtime.install({
    logger: temporalLogger(logger),
    telemetryOptions: {
      // The native core's lines too, forwarded to the same logger instead of the console.
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'WARN' }) },
      // Prometheus' conventions: seconds, unit suffixes, `_total` counters.
      metrics: {
        prometheus: {
          bindAddress: metrics.coreBindAddress,
          countersTotalSuffix: true,
          unitSuffix: true,
          useSecondsForDurations: true,
        },
        globalTags: { worker_id: config.workerId },
      },
    },
    shutdownSignals: ['SIGINT', 'SIGTERM'],
  });
  await metrics.listen(config.bindHost, config.workerMetricsPort);

  const pool = await createDatabasePool(config, { applicationName: 'worker' });
  const connection = await NativeConnection.connect(temporalConnectionOptions(config));
  const workflowBundle = await bundleWorkflows();
  const redis = createRedis(config, '');
  const quotaRedis = createRedis(config, 'quota:');
  const docker = createDocker(config);
  const workers = await createWorkers({
    config,
    connection,
    pool,
    redis,
    quotaRedis,
    docker,
    workflowBundle,
  });
  metrics.watch(workers);
  await startCpuProfile(
    process.env.WORKER_CPU_PROFILE_DIR,
    Number(process.env.WORKER_CPU_PROFILE_SECONDS ?? 60),
  );
  const presence = config.runs.dockerHost
    ? await startDockerHostPresence({ config, pool, docker }, logger)
    : null;
  logger.info({ taskQueues: workers.map((w) => w.options.taskQueue) }, 'worker polling');
  try {
    await Promise.all(workers.map((w) => w.run()));
  } finally {
    await presence?.stop();
    await metrics.close();
    await connection.close();
    await pool.end();
    redis.disconnect();
    quotaRedis.disconnect();
    await stopTracing();
    logger.info('worker stopped');
  }
}

/**
 * WORKER_CPU_PROFILE_DIR (for benches): a V8 CPU profile of the worker's first
 * WORKER_CPU_PROFILE_SECONDS of polling, written there as worker-<pid>.cpuprofile (--cpu-prof
 * is refused in NODE_OPTIONS, and the bench starts the worker through tsx).
 */
async function startCpuProfile(dir: string | undefined, seconds: number): Promise<void> {
  if (!dir) return;
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  setTimeout(() => {
    void session.post('Profiler.stop').then(({ profile }) => {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `worker-${process.pid}.cpuprofile`), JSON.stringify(profile));
      session.disconnect();
    });
  }, seconds * 1000).unref();
}

main().then(
  // A stopped worker is done: a handle a library still holds (seen after the fault tests had
  // restarted Postgres and Temporal: the process alive minutes after "worker stopped") must not
  // keep it running, nor its parent waiting on it.
  () => process.exit(0),
  (error: unknown) => {
    console.error('worker failed:', error);
    process.exit(1);
  },
);
