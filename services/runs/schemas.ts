import Joi from 'joi';
import { boundedText } from '../../platform/text';
import { isUtcInstant, UTC_INSTANT_PATTERN } from '../../platform/instant';
import { IMAGE_REFERENCE_MAX_LENGTH, IMAGE_REFERENCE_PATTERN } from './image-reference';

/** The request schemas the runs service's areas share (routes/<area>.ts), and their bounds. */

export const RUN_NAME_MAX_LENGTH = 128;
export const COMMAND_ITEMS_MAX = 256;
export const COMMAND_ITEM_MAX_LENGTH = 8192;
export const ENV_ENTRIES_MAX = 256;
export const ENV_VALUE_MAX_LENGTH = 32768;
export const TAGS_MAX = 32;
export const TAG_MAX_LENGTH = 64;
export const RUNS_LIST_LIMIT_DEFAULT = 100;
export const RUNS_LIST_LIMIT_MAX = 1000;
export const AUDIT_LIMIT_DEFAULT = 100;
export const AUDIT_LIMIT_MAX = 1000;
export const SELF_CHECK_TIMEOUT_SECONDS_MAX = 600;
/**
 * A requested limit above the tenant's maximum is clamped to it (`clamped: true`), however large:
 * the only bound is what a JSON number holds exactly.
 */
export const REQUESTED_LIMIT_MAX = Number.MAX_SAFE_INTEGER;
/** Docker's CPU resolution: a request is rounded to it, so less would round to 0 (no limit). */
export const CPU_LIMIT_MIN = 0.001;

/** ISO-8601 UTC instant that carries the Z suffix (the spec refuses offsets), on a real day. */
export const utcInstant = () =>
  Joi.string()
    .custom((value: string, helpers) =>
      isUtcInstant(value)
        ? value
        : helpers.message({
            custom: '{{#label}} must be an ISO-8601 UTC instant with the Z suffix, on a real date',
          }),
    )
    .meta({ 'x-schema': { format: 'date-time', pattern: UTC_INSTANT_PATTERN } })
    .description(
      'ISO-8601 UTC instant with the Z suffix, on a real calendar date (2020-02-30 and leap seconds are refused)',
    );

/** `limit`, `offset`, `since`: integers a JSON number holds exactly. */
export const offset = () => Joi.number().integer().min(0).max(Number.MAX_SAFE_INTEGER);
export const pageLimit = (max: number, fallback: number) =>
  Joi.number().integer().min(1).max(max).default(fallback);

/** What a run executes and asks for, one rule each: a run's body and a workflow node share them. */
export const runCommand = () =>
  // An empty argument is an argument (`sh -c ''`, `printf ''`).
  Joi.array()
    .items(boundedText(COMMAND_ITEM_MAX_LENGTH).allow(''))
    .max(COMMAND_ITEMS_MAX)
    .default([]);
export const runEnv = () =>
  Joi.object()
    .pattern(/^[A-Za-z_][A-Za-z0-9_]{0,255}$/, boundedText(ENV_VALUE_MAX_LENGTH).allow(''))
    .max(ENV_ENTRIES_MAX)
    .default({});
export const runTimeoutSeconds = () =>
  Joi.number()
    .integer()
    .min(1)
    .max(REQUESTED_LIMIT_MAX)
    .allow(null)
    .default(null)
    .description(
      'null: 600. Any value above the tenant maximum is clamped to it (`clamped: true`), never refused. Counts running time; paused time is not counted.',
    );
export const runCpuLimit = () =>
  Joi.number()
    .min(CPU_LIMIT_MIN)
    .max(REQUESTED_LIMIT_MAX)
    .allow(null)
    .default(null)
    .description(
      'Cores, rounded to 0.001; null: 1. Above the tenant maximum: clamped (`clamped: true`).',
    );
export const runMemoryLimitMb = () =>
  Joi.number()
    .integer()
    .min(6)
    .max(REQUESTED_LIMIT_MAX)
    .allow(null)
    .default(null)
    .description('null: 256. Above the tenant maximum: clamped (`clamped: true`).');
export const runName = () => boundedText(RUN_NAME_MAX_LENGTH).allow(null);
export const runTags = () =>
  Joi.array().items(boundedText(TAG_MAX_LENGTH).min(1)).max(TAGS_MAX).unique().default([]);
/** A container image reference; its grammar is checked after joi (400 `invalid_image:<ref>`). */
export const imageReference = () =>
  Joi.string()
    .max(IMAGE_REFERENCE_MAX_LENGTH)
    .meta({ 'x-schema': { pattern: IMAGE_REFERENCE_PATTERN } })
    .description(
      'host[:port]/path with :tag and/or @digest; no implicit Docker Hub or `latest`: the host has a `.` or a port or is `localhost`, host/path is at most 255 characters, and a tag or a digest is given, else 400 `invalid_image:<ref>`.',
    );

/** `state_filter`: one of `states` or a comma-separated list of them. */
export function stateFilter(states: readonly string[]) {
  const list = `(${states.join('|')})`;
  return Joi.string()
    .pattern(new RegExp(`^${list}(,${list})*$`))
    .message(`state_filter must be one or more of ${states.join(', ')}, comma-separated`)
    .description('One state or a comma-separated list.');
}

/**
 * An id in a path (a ULID), in either case. A 404 for what is not the tenant's must not depend on
 * the id's shape, so an id that is no ULID is answered `notFound` too.
 */
export const ulidParam = (notFound: () => Error) =>
  Joi.string()
    .pattern(/^[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}$/)
    .uppercase()
    .required()
    .error(notFound);
