import fc from 'fast-check';
import { DateTime } from 'luxon';
import {
  rollingShape,
  windowAt,
  type WindowUnit,
} from '../../../services/quota/consumption/windows';

const at = (iso: string, zone = 'UTC') => DateTime.fromISO(iso, { zone }).toMillis();
const iso = (ms: number | null, zone = 'UTC') =>
  ms === null ? null : DateTime.fromMillis(ms, { zone }).toISO({ suppressMilliseconds: true });
const fixed = (unit: WindowUnit, size: number, tz: string | null = null) =>
  ({ window_kind: 'fixed', window_unit: unit, window_size: size, tz }) as const;

describe('fixed windows: aligned to the calendar in the policy zone', () => {
  it('roll over at a month end in the zone, not in UTC', () => {
    const w = windowAt(
      fixed('month', 1, 'Europe/Berlin'),
      at('2026-01-31T23:30:00', 'Europe/Berlin'),
    );
    expect([iso(w.startMs, 'Europe/Berlin'), iso(w.endMs, 'Europe/Berlin')]).toEqual([
      '2026-01-01T00:00:00+01:00',
      '2026-02-01T00:00:00+01:00',
    ]);
    // 23:30 UTC on Jan 31 is already February in Berlin.
    const next = windowAt(fixed('month', 1, 'Europe/Berlin'), at('2026-01-31T23:30:00Z'));
    expect(iso(next.startMs, 'Europe/Berlin')).toBe('2026-02-01T00:00:00+01:00');
  });

  it('make a DST day 23 or 25 hours long, and its hours real hours', () => {
    const ny = 'America/New_York';
    const spring = windowAt(fixed('day', 1, ny), at('2026-03-08T12:00:00', ny));
    expect((spring.endMs! - spring.startMs) / 3_600_000).toBe(23);
    const fall = windowAt(fixed('day', 1, ny), at('2026-11-01T12:00:00', ny));
    expect((fall.endMs! - fall.startMs) / 3_600_000).toBe(25);
    // 01:30 happens twice on the fall-back day: two distinct one-hour windows.
    const first = windowAt(fixed('hour', 1, ny), at('2026-11-01T05:30:00Z'));
    const second = windowAt(fixed('hour', 1, ny), at('2026-11-01T06:30:00Z'));
    expect(second.startMs - first.startMs).toBe(3_600_000);
    expect([first.endMs! - first.startMs, second.endMs! - second.startMs]).toEqual([
      3_600_000, 3_600_000,
    ]);
  });

  it('start weeks on Monday, make 3 months a quarter, and cut the last window of a larger unit short', () => {
    const week = windowAt(fixed('week', 1), at('2026-11-26T10:00:00Z'));
    expect([iso(week.startMs), iso(week.endMs)]).toEqual([
      '2026-11-23T00:00:00Z',
      '2026-11-30T00:00:00Z',
    ]);
    const quarter = windowAt(fixed('month', 3), at('2026-08-15T00:00:00Z'));
    expect([iso(quarter.startMs), iso(quarter.endMs)]).toEqual([
      '2026-07-01T00:00:00Z',
      '2026-10-01T00:00:00Z',
    ]);
    const fiveHours = windowAt(fixed('hour', 5), at('2026-11-24T22:00:00Z'));
    expect([iso(fiveHours.startMs), iso(fiveHours.endMs)]).toEqual([
      '2026-11-24T20:00:00Z',
      '2026-11-25T00:00:00Z',
    ]);
    const sevenMinutes = windowAt(fixed('minute', 7), at('2026-11-24T22:59:00Z'));
    expect([iso(sevenMinutes.startMs), iso(sevenMinutes.endMs)]).toEqual([
      '2026-11-24T22:56:00Z',
      '2026-11-24T23:00:00Z',
    ]);
  });

  it('tile time: consecutive windows meet, and an instant lies in its window (property)', () => {
    const zones = [
      'UTC',
      'Europe/Berlin',
      'America/New_York',
      'Asia/Kolkata',
      'Australia/Lord_Howe',
    ];
    const units: WindowUnit[] = ['minute', 'hour', 'day', 'week', 'month'];
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.constantFrom(...units),
        fc.integer({ min: 1, max: 13 }),
        fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2035, 0, 1) }),
        (tz, unit, size, instant) => {
          const w = windowAt(fixed(unit, size, tz), instant);
          expect(w.startMs).toBeLessThanOrEqual(instant);
          expect(w.endMs!).toBeGreaterThan(instant);
          expect(windowAt(fixed(unit, size, tz), w.endMs!).startMs).toBe(w.endMs);
          expect(windowAt(fixed(unit, size, tz), w.startMs - 1).endMs).toBe(w.startMs);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('rolling windows: slide, in 60 buckets', () => {
  const rolling = {
    window_kind: 'rolling',
    window_unit: 'hour',
    window_size: 1,
    tz: null,
  } as const;

  it('count a use for at least the window and at most one bucket more', () => {
    const { windowMs, bucketMs } = rollingShape('hour', 1);
    expect([windowMs, bucketMs]).toEqual([3_600_000, 60_000]);
    const use = Date.UTC(2026, 10, 24, 10, 0, 30);
    const key = windowAt(rolling, use).currentKey;
    expect(windowAt(rolling, use + windowMs).keys).toContain(key);
    expect(windowAt(rolling, use + windowMs + bucketMs).keys).not.toContain(key);
    expect(windowAt(rolling, use).keys).toHaveLength(61);
  });

  it('use whole-second buckets of at least a second (a month is 30 days)', () => {
    expect(rollingShape('minute', 1).bucketMs).toBe(1_000);
    expect(rollingShape('day', 1).bucketMs).toBe(1_440_000);
    expect(rollingShape('month', 1)).toEqual({ windowMs: 30 * 86_400_000, bucketMs: 43_200_000 });
  });
});

describe('lifetime windows', () => {
  it('never end', () => {
    expect(
      windowAt({ window_kind: 'lifetime', window_unit: null, window_size: null, tz: null }, 5),
    ).toMatchObject({
      endMs: null,
      keys: ['lifetime'],
    });
  });
});
