import { IANAZone } from 'luxon';

/**
 * The one judge of a time-zone name, for every service (runs: schedules, triggers, working
 * hours; quota: a fixed window's tz). A name is accepted only when it is an IANA tz database name
 * spelled exactly as the database spells it, case included: zones and the links the database
 * keeps (`Europe/Berlin`, `UTC`, `Etc/UTC`, `US/Eastern`, `Etc/GMT+5`), never `europe/berlin`.
 * Nothing is rewritten: the caller stores, and hands Temporal, the name as given. Offsets
 * (`+01:00`, `UTC+1`), the empty string and names over {@link TIME_ZONE_MAX_LENGTH} are refused.
 *
 * Why two checks. luxon's `IANAZone.isValidZone` (Intl on Node's ICU) says whether this process
 * can compute in the zone, which is what quota's windows and the schedules' daylight-saving
 * calendars do, but it ignores case (`europe/berlin` passes) and ICU also knows ids the tz
 * database dropped (`SystemV/AST4`, `US/Pacific-New`). Intl cannot tell the spelling either:
 * `resolvedOptions().timeZone` canonicalises (`Etc/UTC` → `UTC`, `US/Eastern` →
 * `America/New_York`, `Asia/Kolkata` → `Asia/Calcutta`) and `Intl.supportedValuesOf('timeZone')`
 * lists canonical ids only, no links. The JS `Temporal` global (Node 26, the engines floor) does:
 * `ZonedDateTime#timeZoneId` is the tz database's own spelling of the name it was given, case
 * normalised but links kept (`us/eastern` → `US/Eastern`, `Etc/UTC` → `Etc/UTC`), and it
 * refuses ids the database does not have. So a name is spelled exactly when Temporal gives it
 * back unchanged. The Temporal server (Go, time.LoadLocation) looks names up case-sensitively
 * too: it refuses a schedule in `europe/berlin` ("unknown time zone"). JS Temporal accepts
 * offsets as zones (`+01:00`), hence the leading letter the grammar demands.
 */

/** No tz database name comes near (the longest is 32 characters). */
export const TIME_ZONE_MAX_LENGTH = 64;

/** The tz database's grammar: `/`-separated parts of letters, digits, `_`, `-`, `+`. */
const NAME = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/;

interface TemporalApi {
  ZonedDateTime: new (
    epochNanoseconds: bigint,
    timeZone: string,
  ) => { readonly timeZoneId: string };
}

const temporal = (globalThis as { Temporal?: TemporalApi }).Temporal;
if (temporal === undefined)
  throw new Error('this runtime has no Temporal global: time-zone names need Node 26 or later');
const { ZonedDateTime } = temporal;

/**
 * The tz database's spelling of a zone name (case normalised, links kept: `europe/berlin` →
 * `Europe/Berlin`, `etc/utc` → `Etc/UTC`), or null when it names no zone this process can
 * compute in. For names stored before the exact check (`isTimeZone`) existed, read again.
 */
export function tzDatabaseSpellingOf(zone: string): string | null {
  if (zone.length > TIME_ZONE_MAX_LENGTH || !NAME.test(zone) || !IANAZone.isValidZone(zone))
    return null;
  try {
    return new ZonedDateTime(BigInt(0), zone).timeZoneId;
  } catch {
    return null;
  }
}

/** Whether `zone` is an IANA time-zone name spelled exactly as the tz database spells it. */
export const isTimeZone = (zone: string): boolean => tzDatabaseSpellingOf(zone) === zone;
