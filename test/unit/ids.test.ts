import { decodeTime, isValid } from 'ulid';
import { ulid } from '../../db/ids';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

describe('ulid from a pooled PRNG', () => {
  it('carries the current time and is a valid ULID', () => {
    const before = Date.now();
    const id = ulid();
    const after = Date.now();
    expect(isValid(id)).toBe(true);
    expect(decodeTime(id)).toBeGreaterThanOrEqual(before);
    expect(decodeTime(id)).toBeLessThanOrEqual(after);
  });

  it('never repeats across pool refills, and its random part uses every character evenly', () => {
    const ids = Array.from({ length: 50_000 }, () => ulid());
    expect(new Set(ids).size).toBe(ids.length);
    const counts = new Map<string, number>();
    for (const id of ids) for (const c of id.slice(10)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect([...counts.keys()].sort().join('')).toBe(CROCKFORD);
    // 800,000 characters over 32 symbols: 25,000 expected each; ±5% is > 30 standard deviations.
    for (const n of counts.values()) expect(Math.abs(n - 25_000)).toBeLessThan(1_250);
  });
});
