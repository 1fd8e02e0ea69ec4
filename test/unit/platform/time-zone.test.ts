import { IANAZone } from 'luxon';
import { POLICY_CREATE } from '../../../api/quota/routes/policy-schemas';
import { DomainError } from '../../../platform/errors';
import { isTimeZone, TIME_ZONE_MAX_LENGTH } from '../../../platform/time-zone';
import { assertCronAndZone, cronSpecOf } from '../../../services/runs/schedules/temporal-schedule';
import { parseWorkingHours } from '../../../services/runs/working-hours';

/** Names of the tz database as it spells them: zones, links it keeps, the Etc/ fixed offsets. */
const ACCEPTED = [
  'Europe/Berlin',
  'America/New_York',
  'America/Argentina/Buenos_Aires', // three parts
  'America/Port-au-Prince', // a hyphen
  'UTC',
  'Etc/UTC', // a link to UTC: kept, not made UTC
  'Etc/UCT',
  'Etc/Universal',
  'Etc/Zulu',
  'Zulu',
  'GMT',
  'GMT0',
  'GMT+0', // a link of the database, not an offset
  'GMT-0',
  'Etc/GMT',
  'Etc/GMT+5', // POSIX sign: five hours west of Greenwich
  'Etc/GMT-14', // the last of the Etc/GMT zones
  'Etc/GMT+12',
  'US/Eastern', // backward links
  'US/Pacific',
  'Asia/Kolkata',
  'Asia/Calcutta', // the old name ICU still calls canonical
  'Europe/Kyiv',
  'Europe/Kiev',
  'America/Nuuk',
  'America/Godthab',
  'America/Indiana/Knox',
  'America/Knox_IN',
  'Antarctica/South_Pole',
  'NZ-CHAT',
  'GB-Eire',
  'W-SU',
  'EST5EDT', // POSIX-style names the database keeps
  'EST',
  'CET',
];

const REFUSED: [string, string][] = [
  ['europe/berlin', 'lower case'],
  ['EUROPE/BERLIN', 'upper case'],
  ['Europe/berlin', 'one part in the wrong case'],
  ['etc/utc', 'a link in the wrong case'],
  ['utc', 'UTC in lower case'],
  ['Utc', 'UTC in mixed case'],
  ['us/eastern', 'a backward link in the wrong case'],
  ['Etc/gmt+5', 'a fixed zone in the wrong case'],
  ['+01:00', 'an offset'],
  ['-05:00', 'a negative offset'],
  ['+0100', 'an offset without a colon'],
  ['+01', 'an hour offset'],
  ['UTC+1', 'UTC plus an offset'],
  ['UTC+01:00', 'UTC plus an offset with minutes'],
  ['GMT+1', 'GMT plus an offset (only Etc/GMT+1 exists)'],
  ['Etc/GMT+13', 'beyond the Etc/GMT zones'],
  ['Etc/GMT-15', 'beyond the Etc/GMT zones, east'],
  ['Z', 'the ISO-8601 zulu designator'],
  ['', 'the empty string'],
  [' Europe/Berlin', 'a leading space'],
  ['Europe/Berlin ', 'a trailing space'],
  ['Europe/Berlin\n', 'a trailing newline'],
  ['Europe/Berlin\u0000', 'a NUL'],
  ['/Europe/Berlin', 'a leading slash'],
  ['Europe/Berlin/', 'a trailing slash'],
  ['Europe//Berlin', 'an empty part'],
  ['Europe\\Berlin', 'a backslash'],
  ['America/New York', 'a space for the underscore'],
  ['Europe/Berl\u0456n', 'a Cyrillic letter that looks Latin'],
  ['Mars/Olympus', 'no such zone'],
  ['EST5EDT6', 'a POSIX TZ string'],
  ['Local', "Go's name for the host zone"],
  ['localtime', 'a file of a zoneinfo directory, not a zone'],
  ['posixrules', 'a file of a zoneinfo directory, not a zone'],
  ['Factory', 'the database\u2019s placeholder zone (no offset: "-00")'],
  ['SystemV/AST4', 'an id ICU knows that the database dropped (2020b)'],
  ['US/Pacific-New', 'a link the database dropped (2020b) that ICU still knows'],
  ['Canada/East-Saskatchewan', 'a link the database dropped (2017c)'],
  [`Europe/${'X'.repeat(58)}`, 'over 64 characters (65)'],
];

describe('platform/time-zone: an IANA name, spelled as the tz database spells it', () => {
  it('takes names of at most 64 characters (the longest of the database has 32)', () => {
    expect(TIME_ZONE_MAX_LENGTH).toBe(64);
    expect(REFUSED.filter(([zone]) => zone.length > 64).map(([zone]) => zone.length)).toEqual([65]);
  });

  it.each(ACCEPTED)('accepts %s', (zone) => {
    expect(isTimeZone(zone)).toBe(true);
  });

  it.each(REFUSED)('refuses %j (%s)', (zone) => {
    expect(isTimeZone(zone)).toBe(false);
  });

  it("accepts every zone this runtime's ICU lists, as listed, and no other case of any", () => {
    const listed = Intl.supportedValuesOf('timeZone');
    expect(listed.length).toBeGreaterThan(300);
    expect(listed.filter((zone) => !isTimeZone(zone))).toEqual([]);
    const recased = listed.flatMap((zone) => [zone.toLowerCase(), zone.toUpperCase()]);
    expect(recased.filter((zone) => !listed.includes(zone) && isTimeZone(zone))).toEqual([]);
  });

  // The facts of the runtime the rule stands on (platform/time-zone.ts says why): if one changes
  // with a Node upgrade, the rule's reasoning is to be read again.
  it('stands on: luxon ignores case, Intl canonicalises and omits links, Temporal spells', () => {
    expect(IANAZone.isValidZone('europe/berlin')).toBe(true);
    const resolved = (zone: string) =>
      new Intl.DateTimeFormat('en', { timeZone: zone }).resolvedOptions().timeZone;
    expect(resolved('Etc/UTC')).toBe('UTC');
    expect(resolved('US/Eastern')).toBe('America/New_York');
    expect(Intl.supportedValuesOf('timeZone')).not.toContain('US/Eastern');
    expect(Intl.supportedValuesOf('timeZone')).not.toContain('Etc/UTC');
    const { Temporal } = globalThis as unknown as {
      Temporal: { ZonedDateTime: new (ns: bigint, zone: string) => { timeZoneId: string } };
    };
    const spelled = (zone: string) => new Temporal.ZonedDateTime(BigInt(0), zone).timeZoneId;
    expect(spelled('europe/berlin')).toBe('Europe/Berlin');
    expect(spelled('us/eastern')).toBe('US/Eastern');
    expect(spelled('Etc/UTC')).toBe('Etc/UTC');
    expect(spelled('+01:00')).toBe('+01:00'); // hence the grammar's leading letter
  });
});

describe('every judge of a zone takes this rule and keeps the name as given', () => {
  const runsRefusal = (zone: string): string | null => {
    try {
      assertCronAndZone({ cron: '0 3 * * *', timezone: zone });
      return null;
    } catch (error) {
      expect(error).toBeInstanceOf(DomainError);
      return (error as DomainError<string>).code;
    }
  };
  const workingHours = (zone: string): string | null => {
    try {
      return parseWorkingHours(`timezone ${JSON.stringify(zone)}`).timezone;
    } catch {
      return null;
    }
  };
  const quotaTz = (zone: string): { tz?: unknown; error?: string } => {
    const body = {
      ...{ name: 'p', resource_id: 'res_1', kind: 'quota', limit_amount: 10 },
      ...{ window_kind: 'fixed', window_unit: 'day', tz: zone },
    };
    const { value, error } = POLICY_CREATE.validate(body) as {
      value: { tz?: unknown };
      error?: { message: string };
    };
    return error === undefined ? { tz: value.tz } : { error: error.message };
  };

  it.each(ACCEPTED)('%s: schedules and triggers, working hours and quota keep it', (zone) => {
    expect(runsRefusal(zone)).toBeNull();
    expect(cronSpecOf('0 3 * * *', zone).timezone).toBe(zone);
    expect(workingHours(zone)).toBe(zone);
    expect(quotaTz(zone)).toEqual({ tz: zone });
  });

  it.each(REFUSED)('%j: refused by each with its own error', (zone) => {
    expect(runsRefusal(zone)).toBe('invalid_timezone');
    expect(workingHours(zone)).toBeNull();
    // joi's own message for the empty string and the length, as for any string of the body.
    const error =
      zone === ''
        ? '"tz" is not allowed to be empty'
        : zone.length > TIME_ZONE_MAX_LENGTH
          ? '"tz" length must be less than or equal to 64 characters long'
          : '"tz" is not an IANA time zone';
    expect(quotaTz(zone)).toEqual({ error });
  });
});
