import type { Context, Next } from 'koa';
import { validate as isUuid, version as uuidVersion } from 'uuid';
import { runsError, type RefusalDetail } from '../../services/runs/errors';
import type { DatabasePool } from '../../db/pool';
import { redisScript, type Redis } from '../../db/redis';
import { findPrincipal, type KeyPrincipal } from '../../db/runs/tenants';
import type { Permission } from '../../db/runs/permissions';
import type { Logger } from '../../platform/logger';
import { isBackendUnreachable } from '../../db/unreachable';
import { setRateLimitFields } from '../http/rate-limit-fields';

export type { KeyPrincipal };

const BEARER = /^Bearer ([0-9A-Fa-f-]{36})$/;

export const unauthorized = () => runsError('unauthorized');

/** The key of the request, set by `authenticate`. */
export function principalOf(ctx: Context): KeyPrincipal {
  const principal = ctx.state.principal as KeyPrincipal | undefined;
  if (!principal) throw new Error('principalOf called on a route without authenticate()');
  return principal;
}

/**
 * `Authorization: Bearer <UUIDv4>` → the live key's principal (tenant, permissions, tier),
 * else 401. Keys are looked up by their SHA-256; the key itself is never stored.
 */
export function authenticate(pool: DatabasePool) {
  return async function authenticateBearer(ctx: Context, next: Next): Promise<void> {
    const match = BEARER.exec(ctx.get('authorization'));
    const key = match?.[1]?.toLowerCase();
    if (!key || !isUuid(key) || uuidVersion(key) !== 4) throw unauthorized();
    const principal = await findPrincipal(pool, key);
    if (!principal) throw unauthorized();
    ctx.state.principal = principal;
    await next();
  };
}

/** 403 unless the key holds every permission named (audited by auditRefusals, with `missing`). */
export function requirePermission(...needed: Permission[]) {
  return async function checkPermission(ctx: Context, next: Next): Promise<void> {
    const principal = principalOf(ctx);
    const missing = needed.filter((p) => !principal.permissions.includes(p));
    if (missing.length > 0) {
      throw runsError('permission_denied', { details: { missing } });
    }
    await next();
  };
}

/**
 * Per-tenant request rate limit: a window of `windowSeconds` starts with a tenant's first
 * request; past `requests` in it the answer is 429 `rate_limited` with Retry-After. Every answer
 * it judged carries RateLimit-Policy and RateLimit (api/http/rate-limit-fields.ts).
 * One atomic Lua step per request, so concurrent API processes share the count. While Redis
 * cannot answer, requests are served (fail open: the limit protects capacity; Postgres, which
 * holds every record, still answers) and a warning is logged.
 */
const RATE_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return {count, redis.call('TTL', KEYS[1])}`;

export function tenantRateLimit(redis: Redis, limits: { requests: number; windowSeconds: number }) {
  const countRequest = redisScript<[number, number]>(redis, 'runsTenantRate', RATE_SCRIPT);
  const policy = { name: 'tenant', quota: limits.requests, windowSeconds: limits.windowSeconds };
  return async function limitTenantRate(ctx: Context, next: Next): Promise<void> {
    const { tenantId } = principalOf(ctx);
    let counted: [number, number];
    try {
      counted = await countRequest(`rate:${tenantId}`, limits.windowSeconds);
    } catch (error) {
      if (!isBackendUnreachable(error)) throw error;
      (ctx.state.log as Logger).warn({ err: error }, 'rate limiter unreachable; request served');
      await next();
      return;
    }
    const [count, ttl] = counted;
    setRateLimitFields(ctx, policy, {
      remaining: limits.requests - count,
      // -1 (no expiry yet): the window that INCR has just opened.
      resetSeconds: ttl > 0 ? ttl : limits.windowSeconds,
    });
    if (count > limits.requests) {
      throw runsError('rate_limited', {
        retryAfterSeconds: Math.max(ttl, 1),
        // The first refusal of a window is audited, not each: a flood must not become one of writes.
        details: {
          audit: count === limits.requests + 1,
          limit: limits.requests,
          window_seconds: limits.windowSeconds,
        } satisfies RefusalDetail,
      });
    }
    await next();
  };
}
