import fc from 'fast-check';
import {
  DEFAULT_WORKING_DAYS,
  WEEKDAYS,
  isWithinWorkingHours,
  nextWorkingInstant,
  parseWorkingHours,
  workingIntervalEnd,
  type MinuteInterval,
  type Weekday,
  type WorkingHours,
} from '../../../services/runs/working-hours';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
/** Window in which "no working instant was skipped" is sample-checked minute by minute. */
const CHECK_WINDOW = 3 * DAY;

const ZONES = [
  'UTC',
  'Europe/Berlin',
  'America/New_York',
  'Australia/Lord_Howe', // 30-minute DST shift
  'Asia/Kolkata', // half-hour offset, no DST
  'America/Santiago', // southern-hemisphere DST
];

// DST transitions (UTC) that random instants are steered towards.
const TRANSITIONS = [
  '2026-03-29T01:00:00Z', // Europe/Berlin spring
  '2026-10-25T01:00:00Z', // Europe/Berlin autumn
  '2026-03-08T07:00:00Z', // America/New_York spring
  '2026-11-01T06:00:00Z', // America/New_York autumn
  '2026-04-04T15:00:00Z', // Australia/Lord_Howe autumn
  '2026-10-03T15:30:00Z', // Australia/Lord_Howe spring
  '2026-04-05T03:00:00Z', // America/Santiago autumn
  '2026-09-06T04:00:00Z', // America/Santiago spring
].map((iso) => Date.parse(iso));

interface Line {
  readonly items: readonly { readonly first: number; readonly last: number | null }[];
  readonly times: readonly MinuteInterval[] | 'off';
}

interface Definition {
  readonly lines: readonly Line[];
  readonly timezone: string | null;
  readonly shift: boolean;
}

/** Non-overlapping, non-adjacent intervals from distinct sorted minute boundaries. */
const intervalsArb: fc.Arbitrary<MinuteInterval[]> = fc
  .uniqueArray(fc.integer({ min: 0, max: 1440 }), { minLength: 2, maxLength: 6 })
  .map((values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const out: MinuteInterval[] = [];
    for (let i = 0; i + 1 < sorted.length; i += 2) {
      out.push([sorted[i] as number, sorted[i + 1] as number]);
    }
    return out;
  });

const lineArb: fc.Arbitrary<Line> = fc.record({
  items: fc.array(
    fc.record({
      first: fc.integer({ min: 0, max: 6 }),
      last: fc.option(fc.integer({ min: 0, max: 6 }), { nil: null }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
  times: fc.oneof(
    { weight: 1, arbitrary: fc.constant('off' as const) },
    { weight: 4, arbitrary: intervalsArb },
  ),
});

const definitionArb: fc.Arbitrary<Definition> = fc.record({
  lines: fc.array(lineArb, { minLength: 0, maxLength: 6 }),
  timezone: fc.option(fc.constantFrom(...ZONES), { nil: null }),
  shift: fc.boolean(),
});

const instantArb: fc.Arbitrary<number> = fc.oneof(
  fc.integer({ min: Date.parse('2020-01-01T00:00:00Z'), max: Date.parse('2030-12-31T00:00:00Z') }),
  fc
    .tuple(fc.constantFrom(...TRANSITIONS), fc.integer({ min: -3 * DAY, max: 3 * DAY }))
    .map(([t, delta]) => t + delta),
  // Whole minutes near transitions, so interval starts and ends are hit exactly.
  fc
    .tuple(fc.constantFrom(...TRANSITIONS), fc.integer({ min: -3 * 24 * 60, max: 3 * 24 * 60 }))
    .map(([t, minutes]) => t + minutes * MINUTE),
);

const time = (m: number): string => `${Math.floor(m / 60)}:${String(m % 60).padStart(2, '0')}`;

function render(def: Definition): string {
  const out: string[] = ['# generated'];
  if (def.timezone !== null) out.push(`timezone "${def.timezone}"`);
  if (def.shift) out.push('shift gen "Generated" {');
  for (const line of def.lines) {
    const days = line.items
      .map(({ first, last }) =>
        last === null ? WEEKDAYS[first] : `${WEEKDAYS[first]} - ${WEEKDAYS[last]}`,
      )
      .join(', ');
    const times =
      line.times === 'off'
        ? 'off'
        : [...line.times]
            .reverse() // out of order on purpose: the parser sorts
            .map(([s, e]) => `${time(s)} - ${time(e)}`)
            .join(', ');
    out.push(`  workinghours ${days} ${times} // line`);
  }
  if (def.shift) out.push('}');
  // A definition needs at least one statement; this one keeps the default zone.
  if (out.length === 1) out.push('timezone "UTC"');
  return out.join('\n');
}

/** What the definition should mean: TaskJuggler defaults, each line overriding its days. */
function expectedDays(def: Definition): Record<Weekday, readonly MinuteInterval[]> {
  const days: Record<Weekday, readonly MinuteInterval[]> = { ...DEFAULT_WORKING_DAYS };
  for (const line of def.lines) {
    for (const { first, last } of line.items) {
      const end = last ?? first;
      for (let d = first; ; d = (d + 1) % 7) {
        days[WEEKDAYS[d] as Weekday] = line.times === 'off' ? [] : line.times;
        if (d === end) break;
      }
    }
  }
  return days;
}

const hasWorkingTime = (h: WorkingHours): boolean => WEEKDAYS.some((d) => h.days[d].length > 0);
const within = (h: WorkingHours, ms: number): boolean => isWithinWorkingHours(h, new Date(ms));

describe('working hours: properties', () => {
  it('parses generated definitions to the expected weekly pattern', () => {
    fc.assert(
      fc.property(definitionArb, (def) => {
        const h = parseWorkingHours(render(def));
        expect(h.days).toEqual(expectedDays(def));
        expect(h.timezone).toBe(def.timezone ?? 'UTC');
        expect(JSON.parse(JSON.stringify(h))).toEqual(h);
      }),
      { numRuns: 300 },
    );
  });

  it('nextWorkingInstant is the earliest working instant at or after `from`', () => {
    fc.assert(
      fc.property(definitionArb, instantArb, (def, t) => {
        const h = parseWorkingHours(render(def));
        const result = nextWorkingInstant(h, new Date(t));
        if (!hasWorkingTime(h)) {
          expect(result).toBeNull();
          return;
        }
        expect(result).not.toBeNull();
        const r = (result as Date).getTime();
        expect(r).toBeGreaterThanOrEqual(t);
        expect(within(h, r)).toBe(true);
        if (r === t) return;
        expect(within(h, t)).toBe(false);
        expect(within(h, r - 1)).toBe(false);
        // No working instant strictly between t and r: sample every minute boundary.
        const limit = Math.min(r, t + CHECK_WINDOW);
        for (let m = Math.floor(t / MINUTE) * MINUTE + MINUTE; m < limit; m += MINUTE) {
          if (within(h, m)) {
            throw new Error(
              `working at ${new Date(m).toISOString()}, between ${new Date(t).toISOString()} ` +
                `and ${new Date(r).toISOString()}`,
            );
          }
        }
      }),
      { numRuns: 150 },
    );
  });

  it('workingIntervalEnd bounds a stretch of working time starting at a working instant', () => {
    fc.assert(
      fc.property(definitionArb, instantArb, (def, t) => {
        const h = parseWorkingHours(render(def));
        const start = nextWorkingInstant(h, new Date(t));
        if (start === null) return;
        const s = start.getTime();
        const result = workingIntervalEnd(h, start);
        expect(result).not.toBeNull();
        const e = (result as Date).getTime();
        expect(e).toBeGreaterThan(s);
        expect(e - s).toBeLessThanOrEqual(DAY + 2 * 60 * MINUTE);
        expect(within(h, e - 1)).toBe(true);
        for (let m = Math.floor(s / MINUTE) * MINUTE + MINUTE; m < e; m += MINUTE) {
          if (!within(h, m)) throw new Error(`not working at ${new Date(m).toISOString()}`);
        }
        if (!within(h, t)) expect(workingIntervalEnd(h, new Date(t))).toBeNull();
      }),
      { numRuns: 150 },
    );
  });
});
