import type { EffectivePolicyRow } from '../../../db/quota/consumption';
import { windowAt, type Window } from './windows';

/**
 * A policy's verdict on a request, as both enforcement modes make it from the usage they read:
 * one arithmetic (decideQuota, takeTokens, below), whichever store the usage came from.
 */
export interface PolicyVerdict {
  policy: EffectivePolicyRow;
  requested: bigint;
  allowed: boolean;
  limit: bigint;
  used: bigint;
  remaining: bigint;
  overage: bigint;
  window: Window | null;
  retryAfterMs: number | null;
}

export interface DecisionContext {
  tenantId: string;
  subject: string;
  nowMs: number;
  /** Read usage as it is, locking and writing nothing (the usage route): no request to admit. */
  readOnly?: boolean;
}

/** A quota's limit or a rate limit's capacity, the subject's override in place. */
export const limitOf = (policy: EffectivePolicyRow) =>
  BigInt(
    policy.limit_override ??
      (policy.kind === 'quota' ? policy.limit_amount : policy.bucket_capacity)!,
  );

/** The window a quota policy counts in now. */
export const currentWindow = (policy: EffectivePolicyRow, nowMs: number) =>
  windowAt(policy as Parameters<typeof windowAt>[0], nowMs);

/** A quota policy's verdict on `requested`, its window holding `used`. */
export function quotaVerdict(
  context: DecisionContext,
  policy: EffectivePolicyRow,
  window: Window,
  used: bigint,
  requested: bigint,
): PolicyVerdict {
  const limit = limitOf(policy);
  const decision = decideQuota({ used, limit, requested, onExceed: policy.on_exceed });
  return {
    policy,
    requested,
    limit,
    ...decision,
    window,
    retryAfterMs:
      decision.allowed || window.resetsAtMs === null ? null : window.resetsAtMs - context.nowMs,
  };
}

/** A rate limit's verdict on `requested` from its bucket as stored (null: full), and the bucket after. */
export function bucketVerdict(
  context: DecisionContext,
  policy: EffectivePolicyRow,
  previous: BucketState | null,
  requested: bigint,
): { verdict: PolicyVerdict; next: BucketState } {
  const capacity = limitOf(policy);
  const decision = takeTokens(
    previous,
    { capacity, ratePerSec: policy.refill_rate_per_sec!, onExceed: policy.on_exceed },
    requested,
    context.nowMs,
  );
  const verdict = {
    policy,
    requested,
    allowed: decision.allowed,
    limit: capacity,
    used: capacity - decision.remaining,
    remaining: decision.remaining,
    overage: decision.overage,
    window: null,
    retryAfterMs: decision.retryAfterMs,
  };
  return { verdict, next: decision.state };
}

// ------------------------------------------------- a quota's arithmetic

/**
 * A quota policy's decision on one request, in exact integers (bigint): usage can pass 2^53
 * under allow_overage, and nothing here may round. Pure: the strict path (Postgres) and the fast
 * path (a Redis script doing the same arithmetic) both answer with it.
 */
export interface QuotaDecisionInput {
  /** Usage in the window before this request. */
  used: bigint;
  limit: bigint;
  /** This request's amount for the policy's resource (the sum of its items naming it). */
  requested: bigint;
  onExceed: 'block' | 'allow_overage';
}

export interface QuotaDecision {
  allowed: boolean;
  /** Usage after the request if it is admitted (else as before). */
  used: bigint;
  remaining: bigint;
  /** How far past the limit an allow_overage admission went (0 otherwise). */
  overage: bigint;
}

const max = (a: bigint, b: bigint) => (a > b ? a : b);

export function decideQuota(input: QuotaDecisionInput): QuotaDecision {
  const after = input.used + input.requested;
  const fits = after <= input.limit;
  const allowed = fits || input.onExceed === 'allow_overage';
  const used = allowed ? after : input.used;
  return {
    allowed,
    used,
    remaining: max(0n, input.limit - used),
    overage: allowed && !fits ? after - max(input.limit, input.used) : 0n,
  };
}

// ------------------------------------------------- a token bucket's arithmetic

/**
 * A rate_limit policy's token bucket: `capacity` tokens, refilled at `ratePerSec` (5e-7 to 1e14),
 * full when new. Tokens are counted in millionths (bigint): a capacity of 2^53-1 and the finest
 * refill both stay exact, and refill is rounded down, so a bucket never admits a token it did not
 * earn. A clock that goes backwards refills nothing.
 */
export const MICRO = 1_000_000n;

export interface BucketState {
  /** Tokens, in millionths. */
  micro: bigint;
  updatedMs: number;
}

export interface BucketDecision {
  allowed: boolean;
  /** The state to store when allowed (refilled to now, less the tokens taken). */
  state: BucketState;
  /** Whole tokens left after the decision. */
  remaining: bigint;
  /** Tokens taken past empty under allow_overage (whole, rounded up); 0 otherwise. */
  overage: bigint;
  /** When denied, how long until `amount` tokens exist; null when the bucket cannot hold them. */
  retryAfterMs: number | null;
}

const min = (a: bigint, b: bigint) => (a < b ? a : b);

/** Millionths of a token earned in `elapsedMs`, rounded down (and never past `cap`). */
function refill(elapsedMs: number, ratePerSec: number, cap: bigint): bigint {
  const earned = Math.floor(elapsedMs * ratePerSec * 1_000); // millionths per ms = rate × 1e3
  return Number.isFinite(earned) && earned < Number(cap) ? BigInt(earned) : cap;
}

export function takeTokens(
  previous: BucketState | null,
  bucket: { capacity: bigint; ratePerSec: number; onExceed: 'block' | 'allow_overage' },
  amount: bigint,
  nowMs: number,
): BucketDecision {
  const full = bucket.capacity * MICRO;
  const current = previous
    ? min(
        full,
        previous.micro + refill(Math.max(0, nowMs - previous.updatedMs), bucket.ratePerSec, full),
      )
    : full;
  const need = amount * MICRO;
  const fits = current >= need;
  const allowed = fits || bucket.onExceed === 'allow_overage';
  const micro = fits ? current - need : allowed ? 0n : current;
  const short = need - current;
  return {
    allowed,
    state: { micro, updatedMs: Math.max(nowMs, previous?.updatedMs ?? nowMs) },
    remaining: micro / MICRO,
    overage: allowed && !fits ? (short + MICRO - 1n) / MICRO : 0n,
    retryAfterMs:
      allowed || amount > bucket.capacity
        ? null
        : Math.ceil(Number(short) / (bucket.ratePerSec * 1_000)),
  };
}
