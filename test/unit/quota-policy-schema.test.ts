import Ajv2020 from 'ajv/dist/2020';
import { jsonSchemaOf } from '../../api/http/json-schema';
import { POLICY_CREATE } from '../../api/quota/routes/policy-schemas';

/**
 * The policy kind rules are enforced by joi field by field and stated for the object in the
 * document (if/then): the two must agree on every body, accepted or refused.
 */
describe('PolicyCreate: joi and its generated JSON Schema agree', () => {
  const definitions: Record<string, unknown> = {};
  jsonSchemaOf(POLICY_CREATE, definitions);
  const validate = new Ajv2020({ strict: false }).compile(definitions.PolicyCreate as object);
  const base = { name: 'p', resource_id: 'res_1' };
  const quota = {
    ...base,
    kind: 'quota',
    limit_amount: 10,
    window_kind: 'fixed',
    window_unit: 'day',
  };
  const rate = { ...base, kind: 'rate_limit', bucket_capacity: 10, refill_rate_per_sec: 2.5 };

  it.each([
    ['a fixed quota', quota, true],
    ['a fixed quota in a zone, size 7', { ...quota, tz: 'Asia/Tokyo', window_size: 7 }, true],
    ['a rolling quota', { ...quota, window_kind: 'rolling' }, true],
    [
      'a lifetime quota',
      { ...base, kind: 'quota', limit_amount: 1, window_kind: 'lifetime' },
      true,
    ],
    [
      'a lifetime quota with nulls',
      {
        ...base,
        kind: 'quota',
        limit_amount: 1,
        window_kind: 'lifetime',
        window_unit: null,
        tz: null,
      },
      true,
    ],
    ['a rate limit', rate, true],
    [
      'a rate limit with null quota fields',
      { ...rate, limit_amount: null, window_kind: null, tz: null },
      true,
    ],
    ['a quota without a limit', { ...quota, limit_amount: undefined }, false],
    ['a quota with a null limit', { ...quota, limit_amount: null }, false],
    ['a quota with a bucket', { ...quota, bucket_capacity: 3 }, false],
    ['a windowed quota without a unit', { ...quota, window_unit: undefined }, false],
    ['a lifetime quota with a unit', { ...quota, window_kind: 'lifetime' }, false],
    [
      'a lifetime quota with a size',
      { ...base, kind: 'quota', limit_amount: 1, window_kind: 'lifetime', window_size: 2 },
      false,
    ],
    ['a rolling quota with a zone', { ...quota, window_kind: 'rolling', tz: 'UTC' }, false],
    ['a rate limit without a rate', { ...rate, refill_rate_per_sec: undefined }, false],
    ['a rate limit with a limit', { ...rate, limit_amount: 5 }, false],
    ['a rate limit with a window', { ...rate, window_kind: 'fixed' }, false],
    ['a rate at its lower bound', { ...rate, refill_rate_per_sec: 5e-7 }, false],
    ['a rate just above it', { ...rate, refill_rate_per_sec: 5.0001e-7 }, true],
    ['a limit of 2^53-1', { ...quota, limit_amount: Number.MAX_SAFE_INTEGER }, true],
    ['a limit of 0', { ...quota, limit_amount: 0 }, false],
    ['an unknown field', { ...quota, colour: 'red' }, false],
  ])('%s', (_name, body, accepted) => {
    const clean = JSON.parse(JSON.stringify(body)) as object; // drops undefined fields, as a client's JSON does
    expect(POLICY_CREATE.validate(clean).error === undefined).toBe(accepted);
    expect(validate(clean)).toBe(accepted);
  });
});

/**
 * A fixed window's tz: the document says a string of 1 to 64 characters; joi also judges the
 * name (platform/time-zone.ts: the tz database's own spelling, case included), kept as given.
 */
describe('PolicyCreate: the tz of a fixed window', () => {
  const fixed = (tz: unknown) => ({
    ...{ name: 'p', resource_id: 'res_1', kind: 'quota', limit_amount: 10 },
    ...{ window_kind: 'fixed', window_unit: 'day', tz },
  });

  it.each(['Europe/Berlin', 'UTC', 'Etc/UTC', 'US/Eastern', 'Etc/GMT+5'])('keeps %s', (tz) => {
    const result = POLICY_CREATE.validate(fixed(tz));
    expect(result.error).toBeUndefined();
    expect((result.value as { tz: unknown }).tz).toBe(tz);
  });

  it.each(['europe/berlin', 'etc/utc', 'utc', 'US/EASTERN', '+01:00', 'UTC+1', 'SystemV/AST4'])(
    'refuses %s',
    (tz) => {
      expect(POLICY_CREATE.validate(fixed(tz)).error?.message).toBe(
        '"tz" is not an IANA time zone',
      );
    },
  );
});
