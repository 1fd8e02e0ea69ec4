import { once } from 'node:events';
import { Redis } from 'ioredis';

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
export function createRedis(config: { redisUrl: string }, keyPrefix: string): Redis {
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

/**
 * createRedis for a script or a test that uses it at once: resolved when connected (a client
 * without an offline queue refuses commands until then).
 */
export async function connectedRedis(config: { redisUrl: string }, keyPrefix: string) {
  const redis = createRedis(config, keyPrefix);
  if (redis.status !== 'ready') await once(redis, 'ready');
  return redis;
}

/**
 * Closes a client for good. QUIT needs a live connection: on a client that is reconnecting
 * (Redis down), it is refused at once and the reconnect timer would keep the process alive,
 * so the connection is then dropped without it, which also ends the reconnecting.
 */
export async function closeRedis(redis: Redis): Promise<void> {
  await redis.quit().catch(() => redis.disconnect());
}

/**
 * A Lua script of one key as a named command of this client: ioredis sends it by its hash
 * (EVALSHA, falling back to the text once after a Redis restart), not as its whole text per
 * call, and applies the client's key prefix to the key. Defined once per client and name.
 */
export function redisScript<Reply>(
  redis: Redis,
  name: string,
  lua: string,
): (key: string, ...args: (string | number)[]) => Promise<Reply> {
  if (!(name in redis)) redis.defineCommand(name, { numberOfKeys: 1, lua });
  const commands = redis as unknown as Record<
    string,
    (key: string, ...args: (string | number)[]) => Promise<Reply>
  >;
  return (key, ...args) => commands[name]!.call(redis, key, ...args);
}

/**
 * Commands issued in the same turn of the event loop go out in one write and one pipeline
 * (ioredis auto-pipelining; replies and errors stay per command). For a client whose callers
 * issue many small concurrent commands, e.g. the ledger's edge limiter and call meter.
 */
export function enableAutoPipelining(redis: Redis): void {
  redis.options.enableAutoPipelining = true;
}

type KeysScriptCall = (numKeys: number, ...args: string[]) => Promise<unknown>;

/** redisScript for a script of any number of keys: the call names how many come first. */
export function redisKeysScript(redis: Redis, name: string, lua: string): KeysScriptCall {
  if (!(name in redis)) redis.defineCommand(name, { lua });
  return (numKeys, ...args) =>
    (redis as unknown as Record<string, KeysScriptCall>)[name]!.call(redis, numKeys, ...args);
}
