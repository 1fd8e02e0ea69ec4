import type { NewAlertEvent } from '../../../db/quota/alert-events';
import type { AlertRuleRow } from '../../../db/quota/alert-rules';
import type { PolicyVerdict } from '../consumption/verdicts';

/**
 * Which alert rules an admitted request makes cross their threshold: pure, decided from the
 * verdicts the decision already holds (usage after the request, the amount, the limit), so the
 * consume path pays nothing but this arithmetic. A crossing is usage going from below
 * threshold_pct of the window's limit to at or above it; the event store keeps one per (rule,
 * subject, policy, window), so a window crosses a rule once whatever follows.
 */

/** A crossing, as decided: what the event store records, but its id. */
export type Crossing = Omit<NewAlertEvent, 'id'>;

/** A subject_filter matches the subject exactly, or, ending in `*`, as a prefix. */
export function subjectMatches(filter: string | null, subject: string): boolean {
  if (filter === null) return true;
  return filter.endsWith('*') ? subject.startsWith(filter.slice(0, -1)) : subject === filter;
}

const ruleWatches = (
  rule: AlertRuleRow,
  policy: Pick<PolicyVerdict['policy'], 'id' | 'resource_id'>,
  subject: string,
) =>
  rule.enabled &&
  (rule.policy_id === null || rule.policy_id === policy.id) &&
  (rule.resource_id === null || rule.resource_id === policy.resource_id) &&
  subjectMatches(rule.subject_filter, subject);

/**
 * The usages at which the rules watching a quota policy for a subject are crossed: usage u is at
 * or above threshold_pct of `limit` exactly when u ≥ ceil(threshold_pct × limit / 100). A
 * decision that goes from below one of these to at or above it crosses (what crossingsOf finds).
 */
export function crossingUsages(
  rules: AlertRuleRow[],
  policy: Pick<PolicyVerdict['policy'], 'id' | 'resource_id'>,
  subject: string,
  limit: bigint,
): bigint[] {
  return rules
    .filter((rule) => ruleWatches(rule, policy, subject))
    .map((rule) => (BigInt(rule.threshold_pct) * limit + 99n) / 100n);
}

/** used × 100 / limit with two decimals, rounded down, exactly. */
function percentOf(used: bigint, limit: bigint): string {
  const hundredths = (used * 10_000n) / limit;
  const whole = hundredths / 100n;
  const cents = (hundredths % 100n).toString().padStart(2, '0');
  return `${whole}.${cents}`;
}

export function crossingsOf(
  rules: AlertRuleRow[],
  verdicts: PolicyVerdict[],
  subject: string,
): Crossing[] {
  const crossings: Crossing[] = [];
  for (const verdict of verdicts) {
    // Quotas only: a rate limit has no window to cross in; a refund goes down, not across.
    if (verdict.window === null || !verdict.allowed || verdict.requested <= 0n) continue;
    const after = verdict.used;
    const before = after - verdict.requested;
    for (const rule of rules) {
      if (!ruleWatches(rule, verdict.policy, subject)) continue;
      const threshold = BigInt(rule.threshold_pct) * verdict.limit;
      if (before * 100n >= threshold || after * 100n < threshold) continue;
      crossings.push({
        ruleId: rule.id,
        policyId: verdict.policy.id,
        windowId: verdict.window.currentKey,
        thresholdPct: rule.threshold_pct,
        usagePct: percentOf(after, verdict.limit),
        cooldownSeconds: rule.cooldown_seconds,
      });
    }
  }
  return crossings;
}
