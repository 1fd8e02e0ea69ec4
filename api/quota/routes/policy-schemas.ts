import Joi from 'joi';
import { isTimeZone, TIME_ZONE_MAX_LENGTH } from '../../../platform/time-zone';
import { body, id, name } from '../../../services/quota/schemas';

/**
 * PolicyCreate and PolicyPatch. Which fields each kind takes (the spec leaves it to us):
 * - quota: limit_amount and window_kind required; fixed and rolling windows take window_unit
 *   (required) and window_size (default 1); a fixed window may take tz (an IANA zone, default
 *   UTC); a lifetime window takes none of the three; no bucket fields.
 * - rate_limit: bucket_capacity and refill_rate_per_sec required; no limit or window fields.
 * A field the kind does not take may be omitted or null; any other value is 422.
 * joi enforces this field by field (`.when`); the document states it once for the object
 * (KIND_RULES: if/then), each field then plain (`$replace`).
 */
export const WINDOW_UNITS = ['minute', 'hour', 'day', 'week', 'month'] as const;
export const AMOUNT_MAX = Number.MAX_SAFE_INTEGER;
/** refill_rate_per_sec: above 5e-07 and below 1e14 (the spec's bounds, both exclusive). */
export const REFILL_RATE = { above: 5e-7, below: 1e14 } as const;

const amount = () => Joi.number().integer().min(1).max(AMOUNT_MAX);
const refillRate = () => Joi.number().greater(REFILL_RATE.above).less(REFILL_RATE.below);

/** An IANA zone spelled as the tz database spells it (platform/time-zone.ts), kept as given. */
const timeZone = () =>
  Joi.string()
    .max(TIME_ZONE_MAX_LENGTH)
    .custom((value: string, helpers) =>
      isTimeZone(value)
        ? value
        : helpers.message({ custom: '{{#label}} is not an IANA time zone' }),
    );

const notForThisPolicy = { 'any.only': '{{#label}} does not apply to this kind or window' };
/** Required (not null) when `is` holds; otherwise absent or null. */
const requiredWhen = (field: string, is: Joi.Schema | string, then: Joi.Schema) =>
  Joi.any().when(field, {
    is,
    then: then.invalid(null).required(),
    otherwise: Joi.valid(null).messages(notForThisPolicy),
  });
const optionalWhen = (field: string, is: Joi.Schema | string, then: Joi.Schema) =>
  Joi.any().when(field, {
    is,
    then: then.allow(null),
    otherwise: Joi.valid(null).messages(notForThisPolicy),
  });

const plain = (schema: Record<string, unknown>) => ({ 'x-schema': { $replace: true, ...schema } });
const nullable = (schema: Record<string, unknown>) => ({ oneOf: [schema, { type: 'null' }] });
const AMOUNT_SCHEMA = { type: 'integer', minimum: 1, maximum: AMOUNT_MAX };
const RATE_SCHEMA = {
  type: 'number',
  exclusiveMinimum: REFILL_RATE.above,
  exclusiveMaximum: REFILL_RATE.below,
};
const UNIT_SCHEMA = { type: 'string', enum: WINDOW_UNITS };
const SIZE_SCHEMA = { type: 'integer', minimum: 1, maximum: 2_147_483_647 };
const ZONE_SCHEMA = {
  type: 'string',
  minLength: 1,
  maxLength: TIME_ZONE_MAX_LENGTH,
  description: 'an IANA time zone',
};
const isNull = { type: 'null' };

/** The kind rules as JSON Schema: what joi's `.when`s enforce, stated for the object. */
const KIND_RULES = [
  {
    if: { properties: { kind: { const: 'quota' } } },
    then: {
      required: ['limit_amount', 'window_kind'],
      properties: {
        limit_amount: AMOUNT_SCHEMA,
        window_kind: { enum: ['fixed', 'rolling', 'lifetime'] },
        bucket_capacity: isNull,
        refill_rate_per_sec: isNull,
      },
    },
    else: {
      required: ['bucket_capacity', 'refill_rate_per_sec'],
      properties: {
        bucket_capacity: AMOUNT_SCHEMA,
        refill_rate_per_sec: RATE_SCHEMA,
        limit_amount: isNull,
        window_kind: isNull,
      },
    },
  },
  {
    if: { properties: { window_kind: { enum: ['fixed', 'rolling'] } }, required: ['window_kind'] },
    then: { required: ['window_unit'], properties: { window_unit: UNIT_SCHEMA } },
    else: { properties: { window_unit: isNull, window_size: isNull } },
  },
  {
    if: { properties: { window_kind: { const: 'fixed' } }, required: ['window_kind'] },
    else: { properties: { tz: isNull } },
  },
];

const windowed = Joi.valid('fixed', 'rolling').required();

export const POLICY_CREATE = body({
  name: name().required(),
  resource_id: id().required(),
  kind: Joi.string().valid('quota', 'rate_limit').required(),
  limit_amount: requiredWhen('kind', 'quota', amount()).meta(plain(nullable(AMOUNT_SCHEMA))),
  window_kind: requiredWhen(
    'kind',
    'quota',
    Joi.string().valid('fixed', 'rolling', 'lifetime'),
  ).meta(plain(nullable({ type: 'string', enum: ['fixed', 'rolling', 'lifetime'] }))),
  window_unit: requiredWhen('window_kind', windowed, Joi.string().valid(...WINDOW_UNITS)).meta(
    plain(nullable(UNIT_SCHEMA)),
  ),
  window_size: optionalWhen(
    'window_kind',
    windowed,
    Joi.number().integer().min(1).max(2_147_483_647).default(1),
  ).meta(
    plain({ ...nullable(SIZE_SCHEMA), description: 'default 1 for fixed and rolling windows' }),
  ),
  tz: optionalWhen('window_kind', Joi.valid('fixed').required(), timeZone()).meta(
    plain({
      ...nullable(ZONE_SCHEMA),
      description:
        'an IANA time zone for fixed windows, spelled as the tz database spells it, case included (Europe/Berlin, Etc/UTC), kept as given; null: UTC',
    }),
  ),
  bucket_capacity: requiredWhen('kind', 'rate_limit', amount()).meta(
    plain(nullable(AMOUNT_SCHEMA)),
  ),
  refill_rate_per_sec: requiredWhen('kind', 'rate_limit', refillRate()).meta(
    plain(nullable(RATE_SCHEMA)),
  ),
  enforcement_mode: Joi.string().valid('strict', 'fast').default('fast'),
  on_exceed: Joi.string().valid('block', 'allow_overage').default('block'),
  on_backend_error: Joi.string()
    .valid('deny', 'allow')
    .allow(null)
    .default(null)
    .description("null: the mode's default (strict: deny, fast: allow)"),
  enabled: Joi.boolean().default(true),
})
  .meta({ 'x-schema': { allOf: KIND_RULES } })
  .id('PolicyCreate');

const immutable = () =>
  Joi.forbidden().messages({ 'any.unknown': '{{#label}} cannot change after creation' });

export const POLICY_PATCH = body({
  name: name().allow(null),
  limit_amount: amount().allow(null),
  bucket_capacity: amount().allow(null),
  refill_rate_per_sec: refillRate().allow(null),
  on_exceed: Joi.string().valid('block', 'allow_overage').allow(null),
  on_backend_error: Joi.string().valid('deny', 'allow').allow(null),
  enabled: Joi.boolean().allow(null),
  kind: immutable(),
  resource_id: immutable(),
  window_kind: immutable(),
  window_unit: immutable(),
  window_size: immutable(),
  tz: immutable(),
  enforcement_mode: immutable(),
}).id('PolicyPatch');
