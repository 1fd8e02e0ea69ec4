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
