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
