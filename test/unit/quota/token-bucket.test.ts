import fc from 'fast-check';
import { MICRO, takeTokens, type BucketState } from '../../../services/quota/consumption/verdicts';

const block = (capacity: bigint, ratePerSec: number) => ({
  capacity,
  ratePerSec,
  onExceed: 'block' as const,
});

describe('token buckets', () => {
  it('start full, refill at the rate, and say when enough tokens will exist', () => {
    const first = takeTokens(null, block(10n, 1), 10n, 0);
    expect(first).toMatchObject({ allowed: true, remaining: 0n });
    const denied = takeTokens(first.state, block(10n, 1), 3n, 1_500);
    expect(denied).toMatchObject({ allowed: false, remaining: 1n, retryAfterMs: 1_500 });
    expect(takeTokens(first.state, block(10n, 1), 3n, 3_000)).toMatchObject({
      allowed: true,
      remaining: 0n,
    });
    expect(takeTokens(null, block(10n, 1), 11n, 0)).toMatchObject({
      allowed: false,
      retryAfterMs: null,
    });
  });

  it('stay exact at the edges: capacity 2^53-1, the fastest and the slowest refill', () => {
    const capacity = BigInt(Number.MAX_SAFE_INTEGER);
    const all = takeTokens(null, block(capacity, 1e14 - 1), capacity, 0);
    expect(all).toMatchObject({ allowed: true, remaining: 0n });
    expect(takeTokens(all.state, block(capacity, 1e14 - 1), capacity, 1_000_000).remaining).toBe(
      0n,
    );
    expect(takeTokens(all.state, block(capacity, 1e14 - 1), 1n, 1).allowed).toBe(true);
    const slow = takeTokens(null, block(1n, 5.000001e-7), 1n, 0);
    // One token takes ~2e6 s at that rate: not a moment earlier.
    expect(takeTokens(slow.state, block(1n, 5.000001e-7), 1n, 1_999_999_000).allowed).toBe(false);
    expect(takeTokens(slow.state, block(1n, 5.000001e-7), 1n, 2_000_000_000).allowed).toBe(true);
  });

  it('refill nothing when the clock goes backwards, and overdraw only under allow_overage', () => {
    const empty = takeTokens(null, block(5n, 1), 5n, 10_000);
    expect(takeTokens(empty.state, block(5n, 1), 1n, 5_000).allowed).toBe(false);
    const over = takeTokens(
      empty.state,
      { capacity: 5n, ratePerSec: 1, onExceed: 'allow_overage' },
      3n,
      11_000,
    );
    expect(over).toMatchObject({ allowed: true, remaining: 0n, overage: 2n });
  });

  it('never admits more than capacity + refill x elapsed over any sequence of takes (property)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n, max: 1_000n }),
        fc.double({ min: 1e-3, max: 1e3, noNaN: true }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5_000 }), fc.bigInt({ min: 1n, max: 200n })), {
          maxLength: 60,
        }),
        (capacity, rate, takes) => {
          let state: BucketState | null = null;
          let now = 0;
          let admitted = 0n;
          for (const [waitMs, amount] of takes) {
            now += waitMs;
            const decision = takeTokens(state, block(capacity, rate), amount, now);
            if (decision.allowed) {
              admitted += amount;
              state = decision.state;
            }
            expect(decision.remaining).toBeGreaterThanOrEqual(0n);
            expect(decision.state.micro).toBeLessThanOrEqual(capacity * MICRO);
          }
          const earned = BigInt(Math.floor((now * rate) / 1_000));
          expect(admitted).toBeLessThanOrEqual(capacity + earned);
        },
      ),
      { numRuns: 300 },
    );
  });
});
