import { Readable } from 'node:stream';
import { ledgerError } from '../../services/ledger/errors';
import getRawBody from 'raw-body';
import type { Context, Middleware, Next } from 'koa';
import { redisScript, type Redis } from '../../db/redis';
import type { Logger } from '../../platform/logger';
import { PayloadTooLargeError } from '../http/json-body';
import { clientAddress } from '../http/client-address';
import { countingBatcher } from '../../platform/batching';
import { setRateLimitFields, type RateLimitPolicy } from '../http/rate-limit-fields';

/** Paths the edge never limits (probes). */
export const EDGE_EXEMPT_PATHS = new Set(['/healthz', '/ping']);

/**
 * Token bucket per source address, atomic in Redis and timed by the Redis clock (so several
 * API processes share one bucket). Takes up to ARGV[3] tokens, one per request, first come first
 * served; returns {granted, retryAfterMs, tokensLeft}: the requests past the first `granted` are
 * refused, and may retry when the next token is due; `tokensLeft` whole tokens remain after them.
 */
const TOKEN_BUCKET_LUA = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local wanted = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local data = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(data[1]) or burst
local ts = tonumber(data[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate / 1000)
local granted = math.min(wanted, math.floor(tokens))
tokens = tokens - granted
local retry = 0
if granted < wanted then
  retry = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {granted, retry, math.floor(tokens)}
`;

export interface EdgeOptions {
  redis: Redis;
  logger: Logger;
  ratePerSecond: number;
  burst: number;
  bodyLimitBytes: number;
}

/** Requests of one address per token-bucket call at most. */
const EDGE_BATCH_SIZE_MAX = 256;

/**
 * A request's verdict: allowed, or refused with the milliseconds until a token is due; either way
 * the tokens it left in its bucket.
 */
type EdgeVerdict = { allowed: boolean; retryAfterMs: number; tokensLeft: number };

/**
 * The bucket as RateLimit-Policy states it: a burst of `burst` that refills in burst/rate
 * seconds, which is the sustained rate too (20 per 2 s for 10/s, burst 20).
 */
const policyOf = (options: EdgeOptions): RateLimitPolicy => ({
  name: 'address',
  quota: options.burst,
  windowSeconds: options.burst / options.ratePerSecond,
});

/**
 * 10 requests per second, burst 20, per source address (configurable) → 429 RATE_LIMITED with
 * Retry-After; every answer it judged carries RateLimit-Policy and RateLimit
 * (rate-limit-fields.ts). Requests of one address that arrive while its last Redis call is out
 * take their tokens together in the next (NaturalBatcher): one script call per batch, not per
 * request. When Redis cannot answer, the request is served (fail open: the limiter protects
 * capacity, it is not an authorization).
 */
export function edgeRateLimit(options: EdgeOptions): Middleware {
  const takeTokens = redisScript<[number, number, number]>(
    options.redis,
    'ledgerTokenBucketMany',
    TOKEN_BUCKET_LUA,
  );
  const bucketKey = (address: string) =>
    `edge:${options.ratePerSecond}:${options.burst}:${address}`;
  const take = async (address: string, count: number): Promise<EdgeVerdict[]> => {
    const [granted, retryAfterMs, tokensLeft] = await takeTokens(
      bucketKey(address),
      options.ratePerSecond,
      options.burst,
      count,
    );
    // The i-th request of the batch saw the tokens its successors in the batch then took.
    return Array.from({ length: count }, (_, i) => ({
      allowed: i < granted,
      retryAfterMs,
      tokensLeft: tokensLeft + Math.max(0, granted - i - 1),
    }));
  };
  const policy = policyOf(options);
  const batcher = countingBatcher(EDGE_BATCH_SIZE_MAX, take);
  return async function rateLimit(ctx: Context, next: Next): Promise<void> {
    if (EDGE_EXEMPT_PATHS.has(ctx.path)) {
      await next();
      return;
    }
    const address = clientAddress(ctx) ?? 'unknown';
    let verdict: EdgeVerdict | undefined;
    try {
      verdict = await batcher.submit(address, null);
    } catch (error) {
      options.logger.debug(
        { err: (error as Error).message },
        'edge rate limiter unavailable; serving',
      );
    }
    if (verdict)
      setRateLimitFields(ctx, policy, {
        remaining: verdict.tokensLeft,
        resetSeconds: (options.burst - verdict.tokensLeft) / options.ratePerSecond,
      });
    if (verdict && !verdict.allowed) {
      throw ledgerError('RATE_LIMITED', {
        message: 'too many requests from this address; retry with the same Idempotency-Key',
        retryAfterSeconds: Math.max(1, Math.ceil(verdict.retryAfterMs / 1000)),
      });
    }
    await next();
  };
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The edge's body limit (64 KiB by default), tighter than the application's 1 MiB. A declared
 * Content-Length is checked without reading; a chunked body is read up to the limit and handed
 * on to the application's parser unchanged.
 */
export function edgeBodyLimit(options: Pick<EdgeOptions, 'bodyLimitBytes'>): Middleware {
  return async function bodyLimit(ctx: Context, next: Next): Promise<void> {
    if (!METHODS_WITH_BODY.has(ctx.method)) {
      await next();
      return;
    }
    const declared = ctx.get('content-length');
    if (declared !== '') {
      if (Number(declared) > options.bodyLimitBytes)
        throw new PayloadTooLargeError(options.bodyLimitBytes);
      await next();
      return;
    }
    let buffered: Buffer;
    try {
      buffered = await getRawBody(ctx.req, { limit: options.bodyLimitBytes });
    } catch (error) {
      if ((error as { type?: string }).type === 'entity.too.large')
        throw new PayloadTooLargeError(options.bodyLimitBytes);
      throw error;
    }
    const replay = Readable.from([buffered]) as unknown as Context['req'];
    Object.assign(replay, { headers: ctx.req.headers, socket: ctx.req.socket });
    ctx.req = replay;
    await next();
  };
}
