import type { Client } from '@temporalio/client';
import type { Config } from './config';
import type { Logger } from './logger';
import type { DatabasePool } from '../db/pool';
import type { Redis } from '../db/redis';
import type { Docker } from './docker';

/** What the platform hands every service and worker: its backends, already configured. */
export interface PlatformDeps {
  config: Config;
  logger: Logger;
  pool: DatabasePool;
  /** Keys are prefixed with "<service>:". */
  redis: Redis;
  temporal: Client;
  docker: Docker;
}
