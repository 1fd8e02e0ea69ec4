import type { NativeConnection, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Config } from '../platform/config';
import type { DatabasePool } from '../db/pool';
import type { Redis } from '../db/redis';
import type { Docker } from '../platform/docker';

/** What the worker process hands each service's task queues (worker/<service>.ts). */
export interface WorkerDeps {
  config: Config;
  connection: NativeConnection;
  pool: DatabasePool;
  /** Keys unprefixed: each service's activities prefix their own. */
  redis: Redis;
  /** The quota service's keys (prefix `quota:`, as its API's): fast-mode state and ledger stream. */
  quotaRedis: Redis;
  docker: Docker;
  workflowBundle: WorkflowBundleWithSourceMap;
}
