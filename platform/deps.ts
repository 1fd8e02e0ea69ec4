import type { Client } from '@temporalio/client';
import type { Config } from './config';
import type { Logger } from './logger';
import type { DatabasePool } from 'slonik';
import type { Cluster, Redis as SingleRedis } from 'ioredis';
import type { Docker } from './docker';

/** What the platform hands every service and worker: its backends, already configured. */
export interface PlatformDeps {
  config: Config;
  logger: Logger;
  pool: DatabasePool;
  /** One Redis or a Redis Cluster (REDIS_CLUSTER_NODES), the same commands; keys are prefixed with "<service>:". */
  redis: SingleRedis | Cluster;
  temporal: Client;
  docker: Docker;
}
