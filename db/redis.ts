import { Redis } from 'ioredis';
import type { Config } from '../api/platform/config';

export { Redis };

/** Bounds for how long a caller waits on a dead Redis before it gets an error. */
const CONNECT_TIMEOUT_MS = 2_000;
const COMMAND_TIMEOUT_MS = 2_000;
const RECONNECT_DELAY_MAX_MS = 1_000;

/**
 * An ioredis client that fails fast while Redis is down (no offline queue, bounded command
 * time) and keeps reconnecting, so a probe answers 503 during an outage and 200 after it
 * without a restart. `keyPrefix` namespaces every key by service.
 */
export function createRedis(config: Config, keyPrefix: string): Redis {
  return new Redis(config.redisUrl, {
    keyPrefix,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    retryStrategy: (attempt) => Math.min(attempt * 100, RECONNECT_DELAY_MAX_MS),
    lazyConnect: false,
  });
}
