import { once } from 'node:events';
import { Cluster, Redis as SingleRedis, type RedisOptions } from 'ioredis';
import { platformError } from '../platform/errors';
import type { PlatformDeps } from '../platform/deps';

/** A client of one Redis, or of a Redis Cluster (REDIS_CLUSTER_NODES): the same commands. */
export type Redis = PlatformDeps['redis'];

/** Bounds for how long a caller waits on a dead Redis before it gets an error. */
const CONNECT_TIMEOUT_MS = 2_000;
const COMMAND_TIMEOUT_MS = 2_000;
const RECONNECT_DELAY_MAX_MS = 1_000;

export interface RedisSettings {
  redisUrl: string;
  /** host:port of some nodes of a Redis Cluster; empty: the one Redis at redisUrl. */
  redisClusterNodes?: string[];
  /** Replicas that must hold a durable script's writes before it answers (0: none waited for). */
  redisWriteReplicas?: number;
  redisWriteTimeoutMs?: number;
}

interface Durability {
  replicas: number;
  timeoutMs: number;
}

/** Each client's durability, as createRedis was given it. */
const durabilities = new WeakMap<Redis, Durability>();

/**
 * An ioredis client that fails fast while Redis is down (no offline queue, bounded command
 * time) and keeps reconnecting, so a probe answers 503 during an outage and 200 after it
 * without a restart. `keyPrefix` namespaces every key by service. With cluster nodes, a cluster
 * client: it learns the slots from any node, follows MOVED and ASK, and after a master fails
 * finds its promoted replica; REDIS_URL then gives only the credentials and TLS (rediss:).
 */
export function createRedis(settings: RedisSettings, keyPrefix: string): Redis {
  const client = connect(settings, keyPrefix);
  durabilities.set(client, {
    replicas: settings.redisWriteReplicas ?? 0,
    timeoutMs: settings.redisWriteTimeoutMs ?? 0,
  });
  return client;
}

function connect(settings: RedisSettings, keyPrefix: string): Redis {
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

/**
 * redisScript for a script of any number of keys: the call names how many come first. A
 * `durable` script answers only once the client's REDIS_WRITE_REPLICAS replicas hold its writes
 * (WAIT, pipelined after it to the same master): what it answered then survives that master's
 * failover. Fewer in time: 503 SERVICE_UNAVAILABLE, the outcome unknown to the caller, as any 503.
 */
export function redisKeysScript(
  redis: Redis,
  name: string,
  lua: string,
  options: { durable?: boolean } = {},
): KeysScriptCall {
  if (!(name in redis)) redis.defineCommand(name, { lua });
  const durability = options.durable ? durabilities.get(redis) : undefined;
  if (!durability || durability.replicas === 0)
    return (numKeys, ...args) =>
      (redis as unknown as Record<string, KeysScriptCall>)[name]!.call(redis, numKeys, ...args);
  return async (numKeys, ...args) => {
    const [reply, acknowledged] = await scriptThenWait(redis, name, durability, [numKeys, ...args]);
    if (acknowledged < durability.replicas)
      throw platformError('SERVICE_UNAVAILABLE', {
        message: `a write reached ${acknowledged} of ${durability.replicas} Redis replicas in time; retry with the same idempotency key`,
        retryAfterSeconds: 1,
      });
    return reply;
  };
}

/** A script not run because its slot is elsewhere now (a failover, a reshard): sent again. */
const SLOT_ELSEWHERE = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /;
const SLOT_RETRIES = 10;
const SLOT_RETRY_DELAY_MS = 100;

/**
 * The script and WAIT in one pipeline to the master of the script's slot. A cluster client
 * follows a MOVED reply for a lone command, not for a pipeline whose WAIT was answered: the
 * script, which did not run, is sent again once the client has learnt the slots anew.
 */
async function scriptThenWait(
  redis: Redis,
  name: string,
  durability: Durability,
  args: (string | number)[],
): Promise<[unknown, number]> {
  for (let attempt = 1; ; attempt++) {
    const pipeline = redis.pipeline();
    (pipeline as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!(...args);
    pipeline.wait(durability.replicas, durability.timeoutMs);
    const [[scriptError, reply], [waitError, acknowledged]] = (await pipeline.exec()) as [
      [Error | null, unknown],
      [Error | null, number],
    ];
    if (scriptError && SLOT_ELSEWHERE.test(scriptError.message) && attempt < SLOT_RETRIES) {
      if (redis instanceof Cluster) redis.refreshSlotsCache();
      await new Promise((resolve) => setTimeout(resolve, SLOT_RETRY_DELAY_MS));
      continue;
    }
    if (scriptError) throw scriptError;
    if (waitError) throw waitError;
    return [reply, acknowledged];
  }
}
