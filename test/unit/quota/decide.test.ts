import { decideQuota } from '../../../services/quota/consumption/verdicts';

describe('a quota decision', () => {
  it('admits up to the limit exactly, and past it only under allow_overage', () => {
    expect(decideQuota({ used: 7n, limit: 10n, requested: 3n, onExceed: 'block' })).toEqual({
      allowed: true,
      used: 10n,
      remaining: 0n,
      overage: 0n,
    });
    expect(decideQuota({ used: 7n, limit: 10n, requested: 4n, onExceed: 'block' })).toEqual({
      allowed: false,
      used: 7n,
      remaining: 3n,
      overage: 0n,
    });
    expect(decideQuota({ used: 7n, limit: 10n, requested: 4n, onExceed: 'allow_overage' })).toEqual(
      {
        allowed: true,
        used: 11n,
        remaining: 0n,
        overage: 1n,
      },
    );
    // Already over: the whole request is overage.
    expect(
      decideQuota({ used: 12n, limit: 10n, requested: 5n, onExceed: 'allow_overage' }).overage,
    ).toBe(5n);
  });

  it('counts past 2^53 without losing a unit', () => {
    const big = 2n ** 60n;
    expect(
      decideQuota({ used: big, limit: 10n, requested: 1n, onExceed: 'allow_overage' }).used,
    ).toBe(big + 1n);
  });
});
