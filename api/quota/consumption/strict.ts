import {
  addToCounter,
  lockBucket,
  lockCounter,
  readBucket,
  readCounter,
  saveBucket,
  type EffectivePolicyRow,
} from '../../../db/quota/consumption';
import type { Queryable } from '../../../db/quota/queryable';
import { decideQuota } from './decide';
import { takeTokens, type BucketState } from './token-bucket';
import { windowAt, type Window } from './windows';

/**
 * Decisions in Postgres, exact under any concurrency: each policy's counter (or bucket) row is
 * locked in policy id order (one order for every request, so no deadlock) for the transaction,
 * every policy of every item is decided, and the amounts are applied only when all admit.
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

export interface StrictVerdict extends PolicyVerdict {
  /** Writes the verdict's amounts (called only when the whole request is admitted). */
  apply(tx: Queryable): Promise<void>;
}

export interface DecisionContext {
  tenantId: string;
  subject: string;
  nowMs: number;
  /** Read usage as it is, locking and writing nothing (the usage route): no request to admit. */
  readOnly?: boolean;
}

const limitOf = (policy: EffectivePolicyRow, limit: string | null) =>
  BigInt(policy.limit_override ?? limit!);

async function quotaVerdict(
  tx: Queryable,
  context: DecisionContext,
  policy: EffectivePolicyRow,
  requested: bigint,
): Promise<StrictVerdict> {
  const window = windowAt(policy as Parameters<typeof windowAt>[0], context.nowMs);
  const key = {
    tenantId: context.tenantId,
    subject: context.subject,
    policyId: policy.id,
    windowKey: window.currentKey,
  };
  const expiresAt =
    window.currentExpiresMs === null ? null : new Date(window.currentExpiresMs).toISOString();
  const others = window.keys.filter((k) => k !== window.currentKey);
  const used = BigInt(
    context.readOnly
      ? await readCounter(tx, key, window.keys)
      : await lockCounter(tx, { ...key, expiresAt }, others),
  );
  const limit = limitOf(policy, policy.limit_amount);
  const decision = decideQuota({ used, limit, requested, onExceed: policy.on_exceed });
  return {
    policy,
    requested,
    limit,
    ...decision,
    window,
    retryAfterMs:
      decision.allowed || window.resetsAtMs === null ? null : window.resetsAtMs - context.nowMs,
    apply: (db) => addToCounter(db, key, requested),
  };
}

async function bucketVerdict(
  tx: Queryable,
  context: DecisionContext,
  policy: EffectivePolicyRow,
  requested: bigint,
): Promise<StrictVerdict> {
  const key = { tenantId: context.tenantId, subject: context.subject, policyId: policy.id };
  const row = context.readOnly ? await readBucket(tx, key) : await lockBucket(tx, key);
  const previous: BucketState | null = row
    ? { micro: BigInt(row.tokens), updatedMs: Number(row.updated_ms) }
    : null;
  const capacity = limitOf(policy, policy.bucket_capacity);
  const decision = takeTokens(
    previous,
    { capacity, ratePerSec: policy.refill_rate_per_sec!, onExceed: policy.on_exceed },
    requested,
    context.nowMs,
  );
  return {
    policy,
    requested,
    allowed: decision.allowed,
    limit: capacity,
    used: capacity - decision.remaining,
    remaining: decision.remaining,
    overage: decision.overage,
    window: null,
    retryAfterMs: decision.retryAfterMs,
    apply: (db) =>
      saveBucket(db, key, {
        tokens: decision.state.micro.toString(),
        updatedMs: String(decision.state.updatedMs),
      }),
  };
}

/** Every policy's verdict on the request's amounts per resource, rows locked, nothing written. */
export async function decideStrict(
  tx: Queryable,
  context: DecisionContext,
  policies: EffectivePolicyRow[],
  amounts: Map<string, bigint>,
): Promise<StrictVerdict[]> {
  const verdicts: StrictVerdict[] = [];
  for (const policy of policies) {
    const requested = amounts.get(policy.resource) ?? 0n;
    verdicts.push(
      policy.kind === 'quota'
        ? await quotaVerdict(tx, context, policy, requested)
        : await bucketVerdict(tx, context, policy, requested),
    );
  }
  return verdicts;
}
