import type Koa from 'koa';
import type { Client } from '@temporalio/client';
import type client from 'prom-client';
import type { Config } from './config';
import type { Logger } from './logger';
import type { DatabasePool } from '../../db/pool';
import type { Redis } from '../../db/redis';
import type { Docker } from './docker';

/** What the platform hands every service: its backends, already configured. */
export interface PlatformDeps {
  config: Config;
  logger: Logger;
  pool: DatabasePool;
  /** Keys are prefixed with "<service>:". */
  redis: Redis;
  temporal: Client;
  docker: Docker;
}

/** One service's HTTP app plus whatever background work it keeps while it serves. */
export interface ServiceInstance {
  name: string;
  app: Koa;
  metrics: client.Registry;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export type ServiceFactory = (deps: PlatformDeps) => ServiceInstance;
