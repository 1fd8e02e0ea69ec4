import {
  DEFAULT_WORKING_DAYS,
  WORKING_HOURS_MAX_BYTES,
  WORKING_HOURS_MAX_LINES,
  WorkingHoursSyntaxError,
  isWithinWorkingHours,
  nextWorkingInstant,
  parseWorkingHours,
  workingIntervalEnd,
  type WorkingHours,
} from '../../../services/runs/working-hours';

const at = (iso: string): Date => new Date(iso);
const next = (h: WorkingHours, iso: string): string | null =>
  nextWorkingInstant(h, at(iso))?.toISOString() ?? null;
const end = (h: WorkingHours, iso: string): string | null =>
  workingIntervalEnd(h, at(iso))?.toISOString() ?? null;
const within = (h: WorkingHours, iso: string): boolean => isWithinWorkingHours(h, at(iso));

const DEFAULT_DAY = [
  [540, 720],
  [780, 1080],
];

function syntaxError(text: string): WorkingHoursSyntaxError {
  try {
    parseWorkingHours(text);
  } catch (e) {
    if (e instanceof WorkingHoursSyntaxError) return e;
    throw e;
  }
  throw new Error(`expected a syntax error for ${JSON.stringify(text)}`);
}

// 2026-01-05 is a Monday; the week of 2026-01-05 … 2026-01-11 is used throughout (UTC).
describe('parseWorkingHours: syntax', () => {
  it('parses a single line, leaving every other day at the TaskJuggler default', () => {
    const h = parseWorkingHours('workinghours mon 10:00 - 11:00');
    expect(h).toEqual({
      version: 1,
      timezone: 'UTC',
      shift: null,
      days: {
        sun: [],
        mon: [[600, 660]],
        tue: DEFAULT_DAY,
        wed: DEFAULT_DAY,
        thu: DEFAULT_DAY,
        fri: DEFAULT_DAY,
        sat: [],
      },
    });
  });

  it('uses the TaskJuggler defaults when no line names a day (mon–fri 9–12, 13–18)', () => {
    const h = parseWorkingHours('timezone "UTC"');
    expect(h.days).toEqual(DEFAULT_WORKING_DAYS);
    expect(within(h, '2026-01-05T09:00:00Z')).toBe(true);
    expect(within(h, '2026-01-05T12:30:00Z')).toBe(false);
    expect(within(h, '2026-01-10T10:00:00Z')).toBe(false); // Saturday
  });

  it('accepts weekday ranges, including ones wrapping around the week', () => {
    expect(parseWorkingHours('workinghours mon - wed 8:00 - 9:00').days).toMatchObject({
      mon: [[480, 540]],
      tue: [[480, 540]],
      wed: [[480, 540]],
      thu: DEFAULT_DAY,
    });
    const wrapped = parseWorkingHours('workinghours sat - mon 8:00 - 9:00').days;
    expect(wrapped).toMatchObject({
      sat: [[480, 540]],
      sun: [[480, 540]],
      mon: [[480, 540]],
      tue: DEFAULT_DAY,
      fri: DEFAULT_DAY,
    });
    expect(parseWorkingHours('workinghours fri - fri off').days).toMatchObject({
      fri: [],
      thu: DEFAULT_DAY,
    });
  });

  it('accepts lists of weekdays and ranges', () => {
    const h = parseWorkingHours('workinghours mon, wed - thu,sat 7:00-8:00');
    expect(h.days).toEqual({
      sun: [],
      mon: [[420, 480]],
      tue: DEFAULT_DAY,
      wed: [[420, 480]],
      thu: [[420, 480]],
      fri: DEFAULT_DAY,
      sat: [[420, 480]],
    });
  });

  it('accepts off and several intervals per line, sorting them and merging adjacent ones', () => {
    const h = parseWorkingHours(
      'workinghours mon - fri off\nworkinghours tue 14:00 - 15:00, 8:00 - 9:30, 9:30 - 10:00',
    );
    expect(h.days.mon).toEqual([]);
    expect(h.days.tue).toEqual([
      [480, 600],
      [840, 900],
    ]);
  });

  it('lets later lines override the days they name', () => {
    const h = parseWorkingHours(
      [
        'workinghours mon - sun 0:00 - 24:00',
        'workinghours sat, sun off',
        'workinghours wed 9:00 - 10:00',
      ].join('\n'),
    );
    expect(h.days).toEqual({
      sun: [],
      mon: [[0, 1440]],
      tue: [[0, 1440]],
      wed: [[540, 600]],
      thu: [[0, 1440]],
      fri: [[0, 1440]],
      sat: [],
    });
  });

  it('accepts 24:00 as an end and single-digit hours', () => {
    expect(parseWorkingHours('workinghours mon 0:00 - 24:00').days.mon).toEqual([[0, 1440]]);
    expect(parseWorkingHours('workinghours mon 23:59 - 24:00').days.mon).toEqual([[1439, 1440]]);
  });

  it('continues an interval list onto the next line after a trailing comma', () => {
    const h = parseWorkingHours(
      'workinghours mon 9:00 - 10:00,\n  11:00 - 12:00\nworkinghours tue off',
    );
    expect(h.days.mon).toEqual([
      [540, 600],
      [660, 720],
    ]);
    expect(h.days.tue).toEqual([]);
  });

  it('accepts a shift block with id and name, and records them', () => {
    const h = parseWorkingHours(
      [
        'shift office "Office hours" {',
        '  workinghours mon - fri 8:00 - 16:00',
        '  workinghours sat, sun off',
        '}',
      ].join('\n'),
    );
    expect(h.shift).toEqual({ id: 'office', name: 'Office hours' });
    expect(h.days.fri).toEqual([[480, 960]]);
  });

  it('accepts shift headers with only an id or only a name, and a one-line block', () => {
    expect(parseWorkingHours('shift s1 {\nworkinghours mon off\n}').shift).toEqual({
      id: 's1',
      name: null,
    });
    expect(parseWorkingHours("shift 'Night' { workinghours mon off }").shift).toEqual({
      id: null,
      name: 'Night',
    });
    expect(parseWorkingHours('shift s1 "x" {}').days).toEqual(DEFAULT_WORKING_DAYS);
    // Without braces the shift is only a label; a keyword after `shift` is not taken as its id.
    const bare = parseWorkingHours('shift\nworkinghours mon off');
    expect(bare.shift).toEqual({ id: null, name: null });
    expect(bare.days.mon).toEqual([]);
  });

  it('applies statements before, inside and after the shift block in textual order', () => {
    const h = parseWorkingHours(
      [
        'timezone "Europe/Berlin"',
        'workinghours mon off',
        'shift s { workinghours mon 1:00 - 2:00',
        'workinghours tue off }',
        'workinghours tue 3:00 - 4:00',
      ].join('\n'),
    );
    expect(h.timezone).toBe('Europe/Berlin');
    expect(h.days.mon).toEqual([[60, 120]]);
    expect(h.days.tue).toEqual([[180, 240]]);
  });

  it('ignores # and // comments but not inside strings', () => {
    const h = parseWorkingHours(
      [
        '# full-line comment',
        '// another one',
        'shift s "A # B // C" { # trailing',
        '  workinghours mon 9:00 - 10:00 // trailing',
        '}',
        '',
      ].join('\n'),
    );
    expect(h.shift?.name).toBe('A # B // C');
    expect(h.days.mon).toEqual([[540, 600]]);
  });

  it('reads the timezone (default UTC) and accepts CRLF line endings', () => {
    expect(parseWorkingHours('workinghours mon off').timezone).toBe('UTC');
    const h = parseWorkingHours('timezone "Europe/Berlin"\r\nworkinghours mon off\r\n');
    expect(h.timezone).toBe('Europe/Berlin');
    // Kept as written (platform/time-zone.ts): a link is not made its target, UTC included.
    expect(parseWorkingHours('timezone "Etc/UTC"').timezone).toBe('Etc/UTC');
    expect(parseWorkingHours('timezone "US/Eastern"').timezone).toBe('US/Eastern');
    expect(parseWorkingHours('timezone "Asia/Kolkata"').timezone).toBe('Asia/Kolkata');
    expect(parseWorkingHours('timezone "America/New_York"\ntimezone "Asia/Tokyo"').timezone).toBe(
      'Asia/Tokyo',
    );
  });

  it("reads a stored definition's zone in another case with the tz database's spelling, and refuses it when set", () => {
    // Definitions stored before zones were judged by their exact spelling are read again at
    // every submit: they must keep working, in the zone they meant.
    expect(() => parseWorkingHours('timezone "europe/berlin"')).toThrow(/unknown timezone/);
    expect(parseWorkingHours('timezone "europe/berlin"', { stored: true }).timezone).toBe(
      'Europe/Berlin',
    );
    expect(parseWorkingHours('timezone "us/eastern"', { stored: true }).timezone).toBe(
      'US/Eastern',
    );
    expect(parseWorkingHours('timezone "Etc/UTC"', { stored: true }).timezone).toBe('Etc/UTC');
    // Not a zone in any case: refused even when stored.
    expect(() => parseWorkingHours('timezone "Mars/Olympus"', { stored: true })).toThrow(
      /unknown timezone/,
    );
  });

  it('matches keywords, weekdays and off case-insensitively', () => {
    const h = parseWorkingHours('TimeZone "UTC"\nWORKINGHOURS Mon - TUE OFF');
    expect(h.days.mon).toEqual([]);
    expect(h.days.tue).toEqual([]);
  });

  it('produces JSON-serializable output that evaluates identically after a round trip', () => {
    const h = parseWorkingHours('timezone "Europe/Berlin"\nworkinghours sat 10:00 - 11:00');
    const copy = JSON.parse(JSON.stringify(h)) as WorkingHours;
    expect(copy).toEqual(h);
    expect(next(copy, '2026-01-10T00:00:00Z')).toBe(next(h, '2026-01-10T00:00:00Z'));
  });

  it('accepts exactly the maximum number of lines and bytes', () => {
    const lines = Array.from({ length: WORKING_HOURS_MAX_LINES }, () => 'workinghours mon off');
    expect(() => parseWorkingHours(lines.join('\n'))).not.toThrow();
    expect(() => parseWorkingHours(`${lines.join('\n')}\n`)).not.toThrow();
    const padded = `workinghours mon off #${'x'.repeat(WORKING_HOURS_MAX_BYTES - 22)}`;
    expect(padded).toHaveLength(WORKING_HOURS_MAX_BYTES);
    expect(() => parseWorkingHours(padded)).not.toThrow();
  });
});

describe('parseWorkingHours: errors', () => {
  const cases: [string, string, number, number | undefined, RegExp][] = [
    ['empty text', '', 1, undefined, /empty/],
    ['whitespace only', '  \n\t\n', 1, undefined, /empty/],
    ['comments only', '# nothing\n// here\n', 1, undefined, /no statements/],
    [
      'unknown keyword',
      'workinghours mon off\nleaves 2026-01-01',
      2,
      1,
      /unknown keyword 'leaves'/,
    ],
    ['unknown keyword in a shift', 'shift s {\n  vacation "x"\n}', 2, 3, /unknown keyword/],
    ['statement starting with a time', '\n9:00 - 10:00', 2, 1, /expected a keyword/],
    ['bad weekday', 'workinghours monday 9:00 - 10:00', 1, 14, /bad weekday 'monday'/],
    ['bad weekday at range end', '\n\nworkinghours mon - xyz off', 3, 20, /bad weekday 'xyz'/],
    ['missing weekday', 'workinghours 9:00 - 10:00', 1, 14, /bad weekday '9:00'/],
    ['weekday after a trailing comma', 'workinghours mon, 9:00-10:00', 1, 19, /bad weekday/],
    ['minutes of 60', 'workinghours mon 9:60 - 10:00', 1, 18, /bad time '9:60'.*minutes/],
    ['hour above 24', '\nworkinghours mon 9:00 - 25:00', 2, 25, /bad time '25:00'.*hour/],
    ['24:xx other than 24:00', 'workinghours mon 9:00 - 24:30', 1, 25, /bad time '24:30'.*24:00/],
    ['a time without minutes', 'workinghours mon 9 - 10:00', 1, 18, /bad time '9'.*HH:MM/],
    ['one-digit minutes', 'workinghours mon 9:0 - 10:00', 1, 18, /bad time '9:0'/],
    ['missing times', 'workinghours mon', 1, 17, /expected the start time.*end of text/],
    ['missing dash', 'workinghours mon 9:00 10:00', 1, 23, /expected '-'/],
    ['missing end time', 'workinghours mon 9:00 -\nworkinghours tue off', 2, 1, /end time/],
    [
      'interval ending before it starts',
      'workinghours mon 12:00 - 9:00',
      1,
      18,
      /does not end after/,
    ],
    ['empty interval', 'workinghours mon 9:00 - 9:00', 1, 18, /does not end after/],
    ['interval starting at 24:00', 'workinghours mon 24:00 - 24:00', 1, 18, /does not end after/],
    [
      'overlapping intervals on one day',
      '# x\nworkinghours tue 9:00 - 12:00, 11:00 - 13:00',
      2,
      32,
      /9:00 - 12:00 and 11:00 - 13:00 overlap/,
    ],
    [
      'overlap given out of order',
      'workinghours tue 11:00 - 13:00, 9:00 - 12:00',
      1,
      33,
      /overlap/,
    ],
    ['nested interval', 'workinghours tue 8:00 - 18:00, 9:00 - 10:00', 1, 32, /overlap/],
    ['unknown timezone', 'timezone "Mars/Olympus_Mons"', 1, 10, /unknown timezone/],
    ['timezone that is not an IANA name', 'timezone "+01:00"', 1, 10, /unknown timezone/],
    ['timezone as an offset from UTC', 'timezone "UTC+1"', 1, 10, /unknown timezone/],
    ['timezone in the wrong case', 'timezone "europe/berlin"', 1, 10, /unknown timezone/],
    ['UTC in the wrong case', 'workinghours mon off\ntimezone "utc"', 2, 10, /unknown timezone/],
    ['timezone without quotes', 'timezone Europe', 1, 10, /quoted zone name/],
    ['timezone without a value', 'workinghours mon off\ntimezone', 2, 9, /quoted zone name/],
    ['unclosed brace', 'shift s {\n  workinghours mon off\n', 1, 9, /unbalanced braces/],
    ['stray closing brace', 'workinghours mon off\n}', 2, 1, /unbalanced braces/],
    ['extra closing brace', 'shift s {\n}\n}', 3, 1, /unbalanced braces/],
    ['nested shift', 'shift a {\n  shift b {\n  }\n}', 2, 3, /nested shift/],
    ['second shift', 'shift a {}\nshift b {}', 2, 1, /only one shift/],
    ['unterminated string', 'shift s "abc\n{}', 1, 9, /unterminated string/],
    ['unexpected character', 'workinghours mon; off', 1, 17, /unexpected character ";"/],
    ['block comment', '/* no */ workinghours mon off', 1, 1, /unexpected character "\/"/],
  ];

  it.each(cases)('%s', (_name, text, line, column, message) => {
    const e = syntaxError(text);
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('WorkingHoursSyntaxError');
    expect(e.message).toMatch(message);
    expect(e.line).toBe(line);
    expect(e.column).toBe(column);
    expect(e.message).toMatch(new RegExp(`^line ${line}\\b`));
  });

  it('rejects more than the maximum number of lines, naming the first line over', () => {
    const lines = Array.from({ length: WORKING_HOURS_MAX_LINES + 1 }, () => '# x');
    const e = syntaxError(lines.join('\n'));
    expect(e.line).toBe(WORKING_HOURS_MAX_LINES + 1);
    expect(e.message).toMatch(/too many lines \(101\); at most 100/);
  });

  it('rejects more than the maximum number of bytes, naming the line where it is crossed', () => {
    const long = `workinghours mon off #${'x'.repeat(WORKING_HOURS_MAX_BYTES)}`;
    const e = syntaxError(`workinghours tue off\n${long}\nworkinghours wed off`);
    expect(e.line).toBe(2);
    expect(e.message).toMatch(/too long .*at most 8192 bytes/);
    // Multi-byte characters count by their UTF-8 length.
    const e2 = syntaxError(`workinghours tue off # ${'ä'.repeat(WORKING_HOURS_MAX_BYTES / 2)}`);
    expect(e2.message).toMatch(/too long/);
  });

  it('rejects a non-string argument', () => {
    expect(() => parseWorkingHours(null as unknown as string)).toThrow(WorkingHoursSyntaxError);
  });
});

describe('evaluation in UTC', () => {
  const office = parseWorkingHours(
    'workinghours mon - fri 9:00 - 12:00, 13:00 - 18:00\nworkinghours sat, sun off',
  );

  it('treats interval starts as inside and ends as outside', () => {
    expect(within(office, '2026-01-05T09:00:00Z')).toBe(true);
    expect(within(office, '2026-01-05T08:59:59.999Z')).toBe(false);
    expect(within(office, '2026-01-05T11:59:59.999Z')).toBe(true);
    expect(within(office, '2026-01-05T12:00:00Z')).toBe(false);
    expect(within(office, '2026-01-05T13:00:00Z')).toBe(true);
    expect(within(office, '2026-01-05T18:00:00Z')).toBe(false);
  });

  it('returns an instant within working hours unchanged (as a new Date)', () => {
    const from = at('2026-01-05T10:15:30.123Z');
    const result = nextWorkingInstant(office, from);
    expect(result).not.toBe(from);
    expect(result?.getTime()).toBe(from.getTime());
    expect(next(office, '2026-01-05T09:00:00Z')).toBe('2026-01-05T09:00:00.000Z');
  });

  it('moves to the next interval start, including from an interval end', () => {
    expect(next(office, '2026-01-05T08:00:00Z')).toBe('2026-01-05T09:00:00.000Z');
    expect(next(office, '2026-01-05T12:00:00Z')).toBe('2026-01-05T13:00:00.000Z');
    expect(next(office, '2026-01-05T12:59:59.999Z')).toBe('2026-01-05T13:00:00.000Z');
    expect(next(office, '2026-01-05T18:00:00Z')).toBe('2026-01-06T09:00:00.000Z');
    expect(next(office, '2026-01-05T23:59:59Z')).toBe('2026-01-06T09:00:00.000Z');
  });

  it('searches across an all-off weekend', () => {
    expect(next(office, '2026-01-09T18:00:00Z')).toBe('2026-01-12T09:00:00.000Z');
    expect(next(office, '2026-01-10T12:00:00Z')).toBe('2026-01-12T09:00:00.000Z');
    expect(next(office, '2026-01-11T23:59:59.999Z')).toBe('2026-01-12T09:00:00.000Z');
  });

  it('wraps around the week', () => {
    const weekend = parseWorkingHours(
      'workinghours mon - fri off\nworkinghours sat - sun 10:00 - 11:00',
    );
    expect(next(weekend, '2026-01-11T11:00:00Z')).toBe('2026-01-17T10:00:00.000Z');
    expect(next(weekend, '2026-01-05T00:00:00Z')).toBe('2026-01-10T10:00:00.000Z');
    const onlySunday = parseWorkingHours(
      'workinghours mon - sat off\nworkinghours sun 6:00 - 7:00',
    );
    expect(next(onlySunday, '2026-01-11T07:00:00Z')).toBe('2026-01-18T06:00:00.000Z');
    const wrapRange = parseWorkingHours(
      'workinghours mon - sun off\nworkinghours fri - mon 1:00 - 2:00',
    );
    expect(next(wrapRange, '2026-01-05T02:00:00Z')).toBe('2026-01-09T01:00:00.000Z');
    expect(next(wrapRange, '2026-01-11T02:00:00Z')).toBe('2026-01-12T01:00:00.000Z');
  });

  it('returns null when there is no working time at all', () => {
    const none = parseWorkingHours('workinghours mon - sun off');
    expect(nextWorkingInstant(none, at('2026-01-05T10:00:00Z'))).toBeNull();
    expect(within(none, '2026-01-05T10:00:00Z')).toBe(false);
    expect(workingIntervalEnd(none, at('2026-01-05T10:00:00Z'))).toBeNull();
  });

  it('gives the end of the interval containing an instant, null outside', () => {
    expect(end(office, '2026-01-05T09:00:00Z')).toBe('2026-01-05T12:00:00.000Z');
    expect(end(office, '2026-01-05T11:59:59.999Z')).toBe('2026-01-05T12:00:00.000Z');
    expect(end(office, '2026-01-05T13:00:00Z')).toBe('2026-01-05T18:00:00.000Z');
    expect(end(office, '2026-01-05T12:00:00Z')).toBeNull();
    expect(end(office, '2026-01-10T10:00:00Z')).toBeNull();
  });

  it('handles 24:00 ends: midnight is outside unless the next day starts at 00:00', () => {
    const late = parseWorkingHours('workinghours mon - sun off\nworkinghours mon 22:00 - 24:00');
    expect(within(late, '2026-01-05T23:59:59.999Z')).toBe(true);
    expect(within(late, '2026-01-06T00:00:00Z')).toBe(false);
    expect(end(late, '2026-01-05T22:30:00Z')).toBe('2026-01-06T00:00:00.000Z');
    expect(next(late, '2026-01-06T00:00:00Z')).toBe('2026-01-12T22:00:00.000Z');

    const overnight = parseWorkingHours(
      'workinghours mon - sun off\nworkinghours mon 22:00 - 24:00\nworkinghours tue 0:00 - 2:00',
    );
    expect(within(overnight, '2026-01-06T00:00:00Z')).toBe(true);
    // The interval as written ends at midnight; the next one starts right there.
    expect(end(overnight, '2026-01-05T23:00:00Z')).toBe('2026-01-06T00:00:00.000Z');
    expect(end(overnight, '2026-01-06T00:00:00Z')).toBe('2026-01-06T02:00:00.000Z');
  });

  it('handles an always-working week', () => {
    const always = parseWorkingHours('workinghours mon - sun 0:00 - 24:00');
    expect(next(always, '2026-01-10T05:06:07Z')).toBe('2026-01-10T05:06:07.000Z');
    expect(end(always, '2026-01-10T05:06:07Z')).toBe('2026-01-11T00:00:00.000Z');
  });

  it('rejects invalid dates', () => {
    expect(() => isWithinWorkingHours(office, new Date(NaN))).toThrow(RangeError);
    expect(() => nextWorkingInstant(office, new Date(NaN))).toThrow(RangeError);
    expect(() => workingIntervalEnd(office, new Date(NaN))).toThrow(RangeError);
    expect(() => isWithinWorkingHours(office, '2026-01-05' as unknown as Date)).toThrow(RangeError);
  });
});

describe('evaluation in a time zone with daylight saving (Europe/Berlin)', () => {
  // 2026: CET→CEST on Sun 29 March at 01:00 UTC (02:00 → 03:00 local);
  //       CEST→CET on Sun 25 October at 01:00 UTC (03:00 → 02:00 local).
  const office = parseWorkingHours(
    'timezone "Europe/Berlin"\nworkinghours mon - fri 9:00 - 17:00\nworkinghours sat, sun off',
  );

  it('reads intervals in local time on both sides of the spring transition', () => {
    expect(next(office, '2026-03-27T07:00:00Z')).toBe('2026-03-27T08:00:00.000Z'); // 09:00 CET
    expect(end(office, '2026-03-27T08:00:00Z')).toBe('2026-03-27T16:00:00.000Z'); // 17:00 CET
    expect(next(office, '2026-03-27T16:00:00Z')).toBe('2026-03-30T07:00:00.000Z'); // 09:00 CEST
    expect(within(office, '2026-03-30T06:59:59Z')).toBe(false);
    expect(within(office, '2026-03-30T07:00:00Z')).toBe(true);
  });

  it('reads intervals in local time on both sides of the autumn transition', () => {
    expect(next(office, '2026-10-23T16:00:00Z')).toBe('2026-10-26T08:00:00.000Z'); // 09:00 CET
    expect(end(office, '2026-10-23T10:00:00Z')).toBe('2026-10-23T15:00:00.000Z'); // 17:00 CEST
    expect(within(office, '2026-10-26T07:30:00Z')).toBe(false);
  });

  it('starts an interval that begins inside the spring gap at the transition', () => {
    const h = parseWorkingHours('timezone "Europe/Berlin"\nworkinghours sun 02:30 - 04:00');
    expect(next(h, '2026-03-28T12:00:00Z')).toBe('2026-03-29T01:00:00.000Z'); // 03:00 CEST
    expect(within(h, '2026-03-29T00:59:59Z')).toBe(false); // 01:59:59 CET
    expect(within(h, '2026-03-29T01:00:00Z')).toBe(true);
    expect(end(h, '2026-03-29T01:00:00Z')).toBe('2026-03-29T02:00:00.000Z'); // 04:00 CEST
    // The week before, the same interval starts at 02:30 CET.
    expect(next(h, '2026-03-21T12:00:00Z')).toBe('2026-03-22T01:30:00.000Z');
  });

  it('skips an interval lying wholly inside the spring gap', () => {
    const h = parseWorkingHours(
      'timezone "Europe/Berlin"\nworkinghours mon - sat off\nworkinghours sun 02:15 - 02:45',
    );
    expect(next(h, '2026-03-28T12:00:00Z')).toBe('2026-04-05T00:15:00.000Z'); // next Sunday, CEST
  });

  it('merges the pieces of an interval spanning the spring gap', () => {
    const h = parseWorkingHours('timezone "Europe/Berlin"\nworkinghours sun 01:00 - 03:30');
    expect(next(h, '2026-03-28T12:00:00Z')).toBe('2026-03-29T00:00:00.000Z'); // 01:00 CET
    expect(end(h, '2026-03-29T00:00:00Z')).toBe('2026-03-29T01:30:00.000Z'); // 03:30 CEST
  });

  it('counts a repeated wall time in the autumn both times it occurs', () => {
    const h = parseWorkingHours(
      'timezone "Europe/Berlin"\nworkinghours mon - sat off\nworkinghours sun 02:30 - 03:00',
    );
    expect(next(h, '2026-10-24T12:00:00Z')).toBe('2026-10-25T00:30:00.000Z'); // 02:30 CEST
    expect(end(h, '2026-10-25T00:45:00Z')).toBe('2026-10-25T01:00:00.000Z');
    expect(within(h, '2026-10-25T01:15:00Z')).toBe(false); // 02:15 CET
    expect(next(h, '2026-10-25T01:00:00Z')).toBe('2026-10-25T01:30:00.000Z'); // 02:30 CET
    expect(end(h, '2026-10-25T01:30:00Z')).toBe('2026-10-25T02:00:00.000Z');
    expect(next(h, '2026-10-25T02:00:00Z')).toBe('2026-11-01T01:30:00.000Z');
  });

  it('lengthens an interval spanning the repeated hour', () => {
    const h = parseWorkingHours('timezone "Europe/Berlin"\nworkinghours sun 01:00 - 04:00');
    expect(next(h, '2026-10-24T12:00:00Z')).toBe('2026-10-24T23:00:00.000Z'); // 01:00 CEST
    expect(end(h, '2026-10-24T23:00:00Z')).toBe('2026-10-25T03:00:00.000Z'); // 04:00 CET: 4 h
  });

  it('accepts other zones (New York, half-hour offsets)', () => {
    const ny = parseWorkingHours(
      'timezone "America/New_York"\nworkinghours mon - sun 9:00 - 10:00',
    );
    expect(next(ny, '2026-01-05T12:00:00Z')).toBe('2026-01-05T14:00:00.000Z'); // EST
    expect(next(ny, '2026-07-06T12:00:00Z')).toBe('2026-07-06T13:00:00.000Z'); // EDT
    const kolkata = parseWorkingHours(
      'timezone "Asia/Kolkata"\nworkinghours mon - sun 9:00 - 10:00',
    );
    expect(next(kolkata, '2026-01-05T00:00:00Z')).toBe('2026-01-05T03:30:00.000Z');
  });
});
