import type { Context } from 'koa';

/**
 * The RateLimit-Policy and RateLimit response fields of the IETF httpapi working group's draft
 * (draft-ietf-httpapi-ratelimit-headers-10), which the field is adopting in place of the older
 * X-RateLimit-* headers. Each is a Structured Field List of one item: the policy's name as a
 * String, with Integer parameters: `q` the quota and `w` its window in seconds (RateLimit-Policy,
 * the same on every answer); `r` what remains of it and `t` the seconds until it is whole again
 * (RateLimit, on every answer the limiter judged, a 429 included, beside Retry-After).
 */
export interface RateLimitPolicy {
  /** An identifier a client can match between the two fields: lowercase letters, `_` or `-`. */
  name: string;
  quota: number;
  windowSeconds: number;
}

export interface RateLimitState {
  remaining: number;
  resetSeconds: number;
}

const POLICY_NAME = /^[a-z_-]+$/;

export const policyField = (policy: RateLimitPolicy): string =>
  `"${nameOf(policy)}";q=${nonNegative(policy.quota)};w=${Math.max(1, Math.ceil(policy.windowSeconds))}`;

export const stateField = (policy: RateLimitPolicy, state: RateLimitState): string =>
  `"${nameOf(policy)}";r=${nonNegative(state.remaining)};t=${nonNegative(Math.ceil(state.resetSeconds))}`;

/** Both fields on the answer (set before the handler runs, so a refusal carries them too). */
export function setRateLimitFields(
  ctx: Context,
  policy: RateLimitPolicy,
  state: RateLimitState,
): void {
  ctx.set('RateLimit-Policy', policyField(policy));
  ctx.set('RateLimit', stateField(policy, state));
}

/** The two fields as an OpenAPI response's `headers`, for the operations behind a limiter. */
export const RATE_LIMIT_RESPONSE_HEADERS = {
  'RateLimit-Policy': {
    description:
      'The limiter\'s policy (IETF draft-ietf-httpapi-ratelimit-headers): `"<name>";q=<quota>;w=<window seconds>`. Absent when the limiter could not be asked (the request was served).',
    schema: { type: 'string', pattern: '^"[a-z_-]+";q=[0-9]+;w=[0-9]+$' },
  },
  RateLimit: {
    description:
      'What is left of that policy now: `"<name>";r=<remaining>;t=<seconds until it is whole again>`.',
    schema: { type: 'string', pattern: '^"[a-z_-]+";r=[0-9]+;t=[0-9]+$' },
  },
} as const;

function nameOf(policy: RateLimitPolicy): string {
  if (!POLICY_NAME.test(policy.name))
    throw new Error(`invalid rate limit policy name ${policy.name}`);
  return policy.name;
}

const nonNegative = (n: number): number => Math.max(0, Math.floor(n));
