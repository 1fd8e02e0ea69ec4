import { parseInstantWithOffset } from '../../platform/instant';

/**
 * `at`, `expires_at` and `effective_at` are RFC 3339 date-times in the OpenAPI document (what
 * schemathesis generates from): every one of those is an instant, and nothing else is.
 */
describe('instants as the document declares them (RFC 3339 date-time)', () => {
  it('accepts a fraction of any length, kept to the millisecond', () => {
    expect(parseInstantWithOffset('2026-01-02T03:04:05.1234567891Z')).toBe(
      Date.UTC(2026, 0, 2, 3, 4, 5, 123),
    );
    expect(parseInstantWithOffset('2026-01-02T03:04:05.9Z')).toBe(
      Date.UTC(2026, 0, 2, 3, 4, 5, 900),
    );
  });

  it('accepts a leap second as the instant after the minute, as Postgres does', () => {
    expect(parseInstantWithOffset('2016-12-31T23:59:60Z')).toBe(Date.UTC(2017, 0, 1));
    expect(parseInstantWithOffset('2016-12-31T23:59:60.250Z')).toBe(
      Date.UTC(2017, 0, 1, 0, 0, 0, 250),
    );
  });

  it('accepts lower-case t and z', () => {
    expect(parseInstantWithOffset('2026-01-02t03:04:05z')).toBe(Date.UTC(2026, 0, 2, 3, 4, 5));
  });

  it('refuses a day the month does not have instead of moving it to the next month', () => {
    expect(parseInstantWithOffset('2026-02-30T00:00:00Z')).toBeNull();
    expect(parseInstantWithOffset('2026-04-31T00:00:00Z')).toBeNull();
    expect(parseInstantWithOffset('2025-02-29T00:00:00Z')).toBeNull();
    expect(parseInstantWithOffset('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
    expect(parseInstantWithOffset('2026-01-00T00:00:00Z')).toBeNull();
  });

  it('refuses hour 24, minute 60 and offsets past 23:59', () => {
    expect(parseInstantWithOffset('2026-01-02T24:00:00Z')).toBeNull();
    expect(parseInstantWithOffset('2026-01-02T03:60:00Z')).toBeNull();
    expect(parseInstantWithOffset('2026-01-02T03:04:61Z')).toBeNull();
    expect(parseInstantWithOffset('2026-01-02T03:04:05+24:00')).toBeNull();
    expect(parseInstantWithOffset('2026-01-02T03:04:05+01:60')).toBeNull();
  });

  it('keeps what it accepted before: no seconds, an offset without a colon', () => {
    expect(parseInstantWithOffset('2026-01-02T03:04Z')).toBe(Date.UTC(2026, 0, 2, 3, 4));
    expect(parseInstantWithOffset('2026-01-02T05:04:05+0200')).toBe(Date.UTC(2026, 0, 2, 3, 4, 5));
  });
});

describe('instants Postgres and ISO-8601 both hold', () => {
  it('accepts UTC years 0001 to 9999 and refuses what an offset carries past them', () => {
    expect(parseInstantWithOffset('0001-01-01T00:00:00Z')).toBe(
      new Date('0001-01-01T00:00:00Z').getTime(),
    );
    expect(parseInstantWithOffset('9999-12-31T23:59:59.999Z')).toBe(
      new Date('9999-12-31T23:59:59.999Z').getTime(),
    );
    expect(parseInstantWithOffset('0000-01-01T00:00:00Z')).toBeNull();
    expect(parseInstantWithOffset('0001-01-01T00:00:00+00:01')).toBeNull();
    expect(parseInstantWithOffset('9999-12-31T23:59:59-23:59')).toBeNull();
  });
});
