import type { Config } from '../platform/config';
import type { Logger } from '../platform/logger';
import type { ServiceFactory } from './service';
import { createDatabasePool } from '../db/pool';
import { closeRedis, createRedis } from '../db/redis';
import { createTemporalClient } from '../platform/temporal';
import { createDocker } from '../platform/docker';
import { listen } from './http/server';

export interface BootedService {
  name: string;
  port: number;
  /** Graceful: stop accepting, finish in-flight requests, then release every backend. */
  close(): Promise<void>;
}

/** Builds one service with its own pool and Redis client and serves it on `port` (0 = any). */
export async function bootService(
  name: string,
  factory: ServiceFactory,
  config: Config,
  logger: Logger,
  port: number,
): Promise<BootedService> {
  const log = logger.child({ service: name });
  const pool = await createDatabasePool(config, { applicationName: `${name}-api` });
  const redis = createRedis(config, `${name}:`);
  redis.on('error', (error: Error) => log.debug({ err: error.message }, 'redis connection error'));
  const temporal = createTemporalClient(config);
  const instance = factory({
    config,
    logger: log,
    pool,
    redis,
    temporal,
    docker: createDocker(config),
  });
  await instance.start();
  const server = await listen(instance.app, {
    host: config.bindHost,
    port,
    graceMs: config.shutdownGraceMs,
    logger: log,
  });
  return {
    name,
    port: server.port,
    close: async () => {
      await server.close();
      await instance.stop();
      await Promise.allSettled([pool.end(), closeRedis(redis), temporal.connection.close()]);
    },
  };
}
