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
import {
  bucketVerdict,
  currentWindow,
  quotaVerdict,
  type DecisionContext,
  type PolicyVerdict,
} from './verdicts';

/**
 * Decisions in Postgres, exact under any concurrency: each policy's counter (or bucket) row is
 * locked in policy id order (one order for every request, so no deadlock) for the transaction,
 * every policy of every item is decided, and the amounts are applied only when all admit.
 */
export interface StrictVerdict extends PolicyVerdict {
  /** Writes the verdict's amounts (called only when the whole request is admitted). */
  apply(tx: Queryable): Promise<void>;
}

async function strictQuotaVerdict(
  tx: Queryable,
  context: DecisionContext,
  policy: EffectivePolicyRow,
  requested: bigint,
): Promise<StrictVerdict> {
  const window = currentWindow(policy, context.nowMs);
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
  return {
    ...quotaVerdict(context, policy, window, used, requested),
    apply: (db) => addToCounter(db, key, requested),
  };
}

async function strictBucketVerdict(
  tx: Queryable,
  context: DecisionContext,
  policy: EffectivePolicyRow,
  requested: bigint,
): Promise<StrictVerdict> {
  const key = { tenantId: context.tenantId, subject: context.subject, policyId: policy.id };
  const row = context.readOnly ? await readBucket(tx, key) : await lockBucket(tx, key);
  const previous = row ? { micro: BigInt(row.tokens), updatedMs: Number(row.updated_ms) } : null;
  const { verdict, next } = bucketVerdict(context, policy, previous, requested);
  return {
    ...verdict,
    apply: (db) =>
      saveBucket(db, key, { tokens: next.micro.toString(), updatedMs: String(next.updatedMs) }),
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
        ? await strictQuotaVerdict(tx, context, policy, requested)
        : await strictBucketVerdict(tx, context, policy, requested),
    );
  }
  return verdicts;
}
