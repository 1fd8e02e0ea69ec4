import { once } from 'node:events';
import { Cluster, Redis as SingleRedis, type RedisOptions } from 'ioredis';

/** A client of one Redis, or of a Redis Cluster (REDIS_CLUSTER_NODES): the same commands. */
export type Redis = SingleRedis | Cluster;

/** Bounds for how long a caller waits on a dead Redis before it gets an error. */
const CONNECT_TIMEOUT_MS = 2_000;
const COMMAND_TIMEOUT_MS = 2_000;
const RECONNECT_DELAY_MAX_MS = 1_000;

export interface RedisSettings {
  redisUrl: string;
  /** host:port of some nodes of a Redis Cluster; empty: the one Redis at redisUrl. */
  redisClusterNodes?: string[];
}

/**
 * An ioredis client that fails fast while Redis is down (no offline queue, bounded command
 * time) and keeps reconnecting, so a probe answers 503 during an outage and 200 after it
 * without a restart. `keyPrefix` namespaces every key by service. With cluster nodes, a cluster
 * client: it learns the slots from any node, follows MOVED and ASK, and after a master fails
 * finds its promoted replica; REDIS_URL then gives only the credentials and TLS (rediss:).
 */
export function createRedis(settings: RedisSettings, keyPrefix: string): Redis {
  const reconnect = (attempt: number) => Math.min(attempt * 100, RECONNECT_DELAY_MAX_MS);
  const node: RedisOptions = {
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
  };
  const nodes = settings.redisClusterNodes ?? [];
  if (nodes.length === 0)
    return new SingleRedis(settings.redisUrl, {
      ...node,
      keyPrefix,
      enableOfflineQueue: false,
      retryStrategy: reconnect,
      lazyConnect: false,
    });
  const url = new URL(settings.redisUrl);
  return new Cluster(
    nodes.map((hostPort) => {
      const [host, port] = splitHostPort(hostPort);
      return { host, port };
    }),
    {
      keyPrefix,
      enableOfflineQueue: false,
      clusterRetryStrategy: reconnect,
      // A failover takes the cluster a few seconds: a command meanwhile is retried this often,
      // within its command timeout, rather than refused at once.
      retryDelayOnFailover: 200,
      retryDelayOnClusterDown: 200,
      redisOptions: {
        ...node,
        ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
        ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
        ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
      },
    },
  );
}

function splitHostPort(hostPort: string): [string, number] {
  const at = hostPort.lastIndexOf(':');
  return [hostPort.slice(0, at).replace(/^\[|\]$/g, ''), Number(hostPort.slice(at + 1))];
}

/**
 * createRedis for a script or a test that uses it at once: resolved when connected (a client
 * without an offline queue refuses commands until then).
 */
export async function connectedRedis(config: RedisSettings, keyPrefix: string) {
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
