import { meteredSubject, reservationTtlSeconds } from '../../../services/runs/metering';

describe("a metered run's reservation", () => {
  const now = Date.parse('2026-11-28T00:00:00Z');

  it('lasts until the latest the run can end, plus a minute', () => {
    expect(reservationTtlSeconds(now + 3_600_000, now)).toBe(3_660);
    expect(reservationTtlSeconds(now + 1_500, now)).toBe(62);
  });

  it('lasts at least a minute (a deadline already past too) and at most the quota service’s day', () => {
    expect(reservationTtlSeconds(now - 10_000, now)).toBe(60);
    expect(reservationTtlSeconds(now + 86_340_000, now)).toBe(86_400);
    expect(reservationTtlSeconds(now + 86_341_000, now)).toBe(86_400);
    expect(reservationTtlSeconds(now + 30 * 86_400_000, now)).toBe(86_400);
  });

  it("is held on the key's subject, which names its tenant and key", () => {
    expect(meteredSubject({ tenantId: 'acme', keyId: 'k1' })).toBe('runs:acme:k1');
  });
});
