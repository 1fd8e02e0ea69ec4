import type { EffectivePolicyRow } from '../../../db/quota/consumption';
import { decideQuota } from './quota-arithmetic';
import { takeTokens, type BucketState } from './token-bucket';
import { windowAt, type Window } from './windows';

/**
 * A policy's verdict on a request, as both enforcement modes make it from the usage they read:
 * one arithmetic (decideQuota, takeTokens), whichever store the usage came from.
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
