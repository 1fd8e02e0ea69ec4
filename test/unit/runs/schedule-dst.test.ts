import { cronMatcher } from '../../../services/runs/schedules/cron';
import {
  dstCalendars,
  DST_HORIZON_YEARS,
  wallTimeOf,
  zoneTransitions,
} from '../../../services/runs/schedules/dst';

const at = (iso: string) => Date.parse(iso);

describe('schedules: the daylight-saving rule (pure)', () => {
  it('matches a wall minute as Temporal reads a cron: every field, names, ranges and steps', () => {
    const matches = cronMatcher('*/15 9-17/2 1,15 JAN-mar sun,SAT');
    const wall = { minute: 45, hour: 11, day: 15, month: 3, weekday: 0 };
    expect(matches(wall)).toBe(true);
    expect(matches({ ...wall, minute: 50 })).toBe(false);
    expect(matches({ ...wall, hour: 10 })).toBe(false);
    expect(matches({ ...wall, hour: 19 })).toBe(false);
    expect(matches({ ...wall, month: 4 })).toBe(false);
    // Day of month and day of week must both match (not the classic "or").
    expect(matches({ ...wall, weekday: 1 })).toBe(false);
    expect(matches({ ...wall, day: 2 })).toBe(false);
  });

  it('finds a zone’s offset changes to the minute, and none in a zone without them', () => {
    const year = [at('2027-01-01T00:00:00Z'), at('2028-01-01T00:00:00Z')] as const;
    expect(zoneTransitions('America/New_York', ...year)).toEqual([
      { at: at('2027-03-14T07:00:00Z'), before: -300, after: -240 },
      { at: at('2027-11-07T06:00:00Z'), before: -240, after: -300 },
    ]);
    expect(zoneTransitions('Europe/London', ...year)).toEqual([
      { at: at('2027-03-28T01:00:00Z'), before: 0, after: 60 },
      { at: at('2027-10-31T01:00:00Z'), before: 60, after: 0 },
    ]);
    // Lord Howe moves by 30 minutes.
    expect(zoneTransitions('Australia/Lord_Howe', ...year)).toEqual([
      { at: at('2027-04-03T15:00:00Z'), before: 660, after: 630 },
      { at: at('2027-10-02T15:30:00Z'), before: 630, after: 660 },
    ]);
    expect(zoneTransitions('Asia/Kolkata', ...year)).toEqual([]);
  });

  it('adds a skipped wall time, moved forward by the gap, as a calendar entry', () => {
    const from = at('2027-01-01T00:00:00Z');
    const [spring, next] = dstCalendars('30 2 * * *', 'America/New_York', from);
    // 02:30 does not exist on 2027-03-14: it fires at 03:30 EDT.
    expect(spring).toEqual({
      year: 2027,
      month: 'MARCH',
      dayOfMonth: 14,
      hour: 3,
      minute: [30],
      comment: 'daylight saving 2027-03-14: skipped wall times, moved forward',
    });
    // Nothing for a fall back: the next entry is a year on.
    expect(next).toMatchObject({ year: 2028, month: 'MARCH', hour: 3 });
    const london = dstCalendars('30 1 * * *', 'Europe/London', from);
    expect(london[0]).toMatchObject({ year: 2027, month: 'MARCH', dayOfMonth: 28, hour: 2 });
    expect(london).toHaveLength(DST_HORIZON_YEARS);
    // Lord Howe skips 02:00-02:29: 02:15 moves to 02:45.
    expect(dstCalendars('15 2 * * *', 'Australia/Lord_Howe', from)[0]).toMatchObject({
      year: 2027,
      month: 'OCTOBER',
      dayOfMonth: 3,
      hour: 2,
      minute: [45],
    });
  });

  it('adds nothing where a moved wall time is an occurrence already, or no gap touches the cron', () => {
    const from = at('2027-01-01T00:00:00Z');
    // The missing 02:30 moves to 03:30, itself an occurrence.
    expect(dstCalendars('30 * * * *', 'America/New_York', from)).toEqual([]);
    expect(dstCalendars('* * * * *', 'Europe/London', from)).toEqual([]);
    expect(dstCalendars('0 12 * * *', 'America/New_York', from)).toEqual([]);
    expect(dstCalendars('30 2 * * *', 'UTC', from)).toEqual([]);
  });

  it('names the wall time an instant fires for: one for both instants of a repeated time, the skipped one for a moved instant', () => {
    const ny = (cron: string, iso: string) => wallTimeOf(cron, 'America/New_York', at(iso));
    // 2027-11-07: 01:30 EDT (05:30Z) and 01:30 EST (06:30Z) are one wall time.
    expect(ny('30 1 * * *', '2027-11-07T05:30:00Z')).toBe('2027-11-07T01:30:00');
    expect(ny('30 1 * * *', '2027-11-07T06:30:00Z')).toBe('2027-11-07T01:30:00');
    // 2027-03-14: 02:30 is moved to 03:30 EDT (07:30Z)...
    expect(ny('30 2 * * *', '2027-03-14T07:30:00Z')).toBe('2027-03-14T02:30:00');
    // ...unless 03:30 is itself an occurrence, or the instant is not on the cron's minute.
    expect(ny('30 2,3 * * *', '2027-03-14T07:30:00Z')).toBe('2027-03-14T03:30:00');
    expect(ny('30 2 * * *', '2027-03-14T07:30:07Z')).toBe('2027-03-14T03:30:07');
    // A day later, and in a zone without transitions, the plain reading.
    expect(ny('30 2 * * *', '2027-03-15T06:30:00Z')).toBe('2027-03-15T02:30:00');
    expect(wallTimeOf('30 2 * * *', 'UTC', at('2027-03-14T02:30:00Z'))).toBe('2027-03-14T02:30:00');
    const london = (iso: string) => wallTimeOf('30 * * * *', 'Europe/London', at(iso));
    expect(london('2027-10-31T00:30:00Z')).toBe('2027-10-31T01:30:00');
    expect(london('2027-10-31T01:30:00Z')).toBe('2027-10-31T01:30:00');
    expect(london('2027-10-30T23:30:00Z')).toBe('2027-10-31T00:30:00');
  });
});
