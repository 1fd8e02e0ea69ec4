import Joi from 'joi';
import { boundedText } from '../../platform/text';
import { parseInstantWithOffset } from '../../platform/instant';

/**
 * The request pieces the spec's Limits table bounds, one each: every route takes its fields from
 * here, so a bound is stated once (and in the OpenAPI document, which is generated from them).
 */
export const LIMITS = {
  subjectChars: 256,
  nameChars: 200,
  actorChars: 200,
  prefixChars: 128,
  resourceChars: 200,
  idempotencyKeyChars: 200,
  itemsMax: 50,
  amountMax: Number.MAX_SAFE_INTEGER,
  listLimitMax: 500,
  listLimitDefault: 100,
  jobListLimitDefault: 50,
  descriptionChars: 2_000,
} as const;

/** No control characters (U+0000..U+001F, U+007F) and no curly braces: subjects and prefixes. */
export const SUBJECT_PATTERN = '^[^\\u0000-\\u001f\\u007f{}]*$';
const SUBJECT_RULE = { min: 1, pattern: SUBJECT_PATTERN, refuses: 'control characters or braces' };

export const subject = () => boundedText(LIMITS.subjectChars, SUBJECT_RULE);
export const prefix = () => boundedText(LIMITS.prefixChars, SUBJECT_RULE);
/** Names of plans, policies, alert rules, resources: 1 to 200 characters. */
export const name = () => boundedText(LIMITS.nameChars, { min: 1 });
export const actor = () => boundedText(LIMITS.actorChars, { min: 1 });
/** An API key's name: up to 200 characters, empty by default. */
export const keyName = () => boundedText(LIMITS.nameChars).allow('');
export const description = () => boundedText(LIMITS.descriptionChars).allow('');
export const idempotencyKey = () => boundedText(LIMITS.idempotencyKeyChars, { min: 1 }).allow(null);
/** Ids in paths are strings; one that is not ours is simply not found. */
export const id = () => boundedText(100, { min: 1 });

export const listLimit = (fallback: number = LIMITS.listLimitDefault) =>
  Joi.number().integer().min(1).max(LIMITS.listLimitMax).default(fallback);

/** A body object: unknown properties are refused (the spec's rule for every request object). */
export const body = (keys: Joi.PartialSchemaMap) => Joi.object(keys).required();

/** An RFC 3339 date-time with its offset (query bounds); converted to ISO-8601 UTC. */
export const instant = () =>
  Joi.string()
    .custom((value: string, helpers) => {
      const ms = parseInstantWithOffset(value);
      return ms === null
        ? helpers.message({ custom: '{{#label}} must be an RFC 3339 date-time on a real date' })
        : new Date(ms).toISOString();
    })
    .meta({ 'x-schema': { format: 'date-time' } });

/** An opaque page cursor: the next_cursor of the previous page. */
export const cursor = () =>
  Joi.string()
    .pattern(/^[0-9]{1,19}$/)
    .messages({ 'string.pattern.base': '{{#label}} must be a next_cursor of a previous page' });
