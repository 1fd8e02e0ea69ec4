import canonicalize from 'canonicalize';
import Joi from 'joi';
import { NO_NUL_PATTERN } from '../../platform/text';
import { parseInstantWithOffset } from '../../platform/instant';
import { ledgerError, type LedgerErrorCode } from './errors';
import { invalid, isUuid, LIMITS } from './validation';

/**
 * The joi pieces of the ledger's requests: each route's schemas (routes/<area>.ts) validate with them and
 * the OpenAPI document is generated from them. A field the spec gives its own code refuses with
 * it (joi's `.error()`: validate() rethrows a domain error as is) and with the message the ledger
 * has always given; the rest answers INVALID_REQUEST with joi's per-field details.
 *
 * Order of refusals, as the ledger has always checked a body: joi's own findings (a body that is
 * not an object, a field of the wrong type or value: INVALID_REQUEST) first, then the unknown
 * fields a body claims (when it gives them its own code), then each field's own code in the order
 * the keys are declared. bodySchema's chooser keeps that order.
 */

export type Refusal = Error | Joi.ErrorReport;
export const isReport = (error: Refusal): error is Joi.ErrorReport => !(error instanceof Error);
const topLevelUnknown = (report: Joi.ErrorReport) =>
  report.code === 'object.unknown' && report.path.length === 1;

/** Unknown keys a body refuses with its own code (all of them, or those `claims` picks). */
export interface UnknownKeys {
  claims?: (key: string) => boolean;
  refuse: (keys: string[]) => Error;
}

/** The refusal a body gives of all joi found, in the ledger's order (above). */
function chooseRefusal(errors: Refusal[], unknownKeys?: UnknownKeys): Error | Joi.ErrorReport[] {
  const reports = errors.filter(isReport);
  const claimed = unknownKeys
    ? reports.filter((r) => topLevelUnknown(r) && (unknownKeys.claims?.(String(r.path[0])) ?? true))
    : [];
  const others = reports.filter((r) => !claimed.includes(r));
  if (others.length > 0) return others;
  if (claimed.length > 0) return unknownKeys!.refuse(claimed.map((r) => String(r.path[0])));
  return errors.find((e): e is Error => e instanceof Error)!;
}

/** Unknown fields of a body refused with the body's own code (`unknown fields: a, b`). */
export const unknownFields = (code: 'INVALID_TENANT' | 'INVALID_KEY'): UnknownKeys => ({
  refuse: (keys: string[]) => invalid(code, `unknown fields: ${keys.join(', ')}`),
});

/** A request body: a JSON object with these keys (no others), refused in the ledger's order. */
export const bodySchema = (keys: Joi.PartialSchemaMap, unknownKeys?: UnknownKeys) =>
  Joi.object(keys)
    .required()
    .error((errors: Refusal[]) => chooseRefusal(errors, unknownKeys));

export interface TextRule {
  /** Required: a missing field is `<field> is required`. */
  required?: boolean;
  /** Blank (empty or whitespace only) is refused with this message. */
  blank?: string;
  /** A further check of the value, and its message. */
  check?: { test: (value: string) => boolean; message: string };
}

/**
 * A string field of at most `maxChars` characters (counted as code points) with its own code:
 * `<field> is required`, `<field> must be a string`, `<field> is longer than <max> chars`, then
 * the rule's own. U+0000 is left to the database (422 INVALID_INPUT), as the document says.
 */
export function text(
  field: string,
  maxChars: number,
  code: LedgerErrorCode,
  rule: TextRule = {},
): Joi.StringSchema {
  const messages: Record<string, string> = {
    'any.required': `${field} is required`,
    'string.max': `${field} is longer than ${maxChars} chars`,
    ...(rule.check
      ? { 'string.check': rule.check.message, 'string.empty': rule.check.message }
      : {}),
    ...(rule.blank ? { 'string.empty': rule.blank, 'string.blank': rule.blank } : {}),
  };
  // '' skips joi's rules when allowed: allowed only where no rule of the field refuses it.
  const allowsEmpty = !rule.blank && (!rule.check || rule.check.test(''));
  const schema = Joi.string()
    .custom((value: string, helpers) => {
      if (value.length > maxChars && [...value].length > maxChars)
        return helpers.error('string.max', { limit: maxChars });
      if (rule.blank && value.trim() === '') return helpers.error('string.blank');
      if (rule.check && !rule.check.test(value)) return helpers.error('string.check');
      return value;
    })
    .messages({ 'string.blank': '{{#label}} is blank', 'string.check': '{{#label}} is malformed' })
    .meta({ 'x-schema': { maxLength: maxChars, pattern: NO_NUL_PATTERN } })
    .error((errors) => {
      const reason = errors[0]?.code ?? '';
      return invalid(code, messages[reason] ?? `${field} must be a string`);
    });
  const strings = allowsEmpty ? schema.allow('') : schema;
  return rule.required ? strings.required() : strings;
}

/** metadata: a JSON object of at most 16 KiB in RFC 8785 canonical form (INVALID_METADATA). */
export const metadata = () =>
  Joi.object()
    .unknown(true)
    .custom((value: unknown, helpers) => {
      const bytes = Buffer.byteLength(canonicalize(value) ?? '', 'utf8');
      return bytes > LIMITS.metadataBytesMax ? helpers.error('metadata.size', { bytes }) : value;
    })
    .messages({ 'metadata.size': '{{#label}} is {{#bytes}} bytes in canonical JSON' })
    .description(
      'at most 16 KiB as RFC 8785 canonical JSON; no U+0000 in any key or string (422 INVALID_INPUT)',
    )
    .error((errors) => {
      const report = errors[0];
      if (report?.code !== 'metadata.size')
        return invalid('INVALID_METADATA', 'metadata must be a JSON object');
      return invalid(
        'INVALID_METADATA',
        `metadata is ${String((report.local as { bytes: number }).bytes)} bytes in canonical JSON; at most ${LIMITS.metadataBytesMax}`,
      );
    });

/** A balance floor, judged against its account's scale by the domain (money.ts: INVALID_FLOOR). */
export const floor = (description?: string) =>
  Joi.any().meta({
    'x-schema': {
      $replace: true,
      ...(description ? { description } : {}),
      oneOf: [
        {
          type: 'string',
          description: 'decimal string at the asset scale',
          pattern: '^-?\\d+(\\.\\d+)?$',
        },
        { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
        { type: 'null' },
      ],
    },
  });

/** A UUID the domain looks up (an unknown or malformed one is its refusal, not joi's). */
export const uuidString = () => Joi.string().meta({ 'x-schema': { format: 'uuid' } });

/** A path id: any string; one that is not a UUID of the tenant is simply not found (404). */
export const pathId = (description: string) => Joi.string().description(description);
export const idParams = (name: string, description: string) =>
  Joi.object({ [name]: pathId(description).required() });

const pageRefusal = (field: string, message: string, detail: string, type: string) =>
  ledgerError('INVALID_REQUEST', {
    message,
    details: [{ field, location: 'query', message: detail, type }],
  });
const LIMIT_MESSAGE = `limit must be an integer from 1 to ${LIMITS.pageSizeMax}`;

/** `limit` 1..1000 (default 100) as digits, `cursor` a UUIDv7 from a previous page (lowercased). */
export const PAGE_KEYS = {
  limit: Joi.any()
    .custom((value: unknown, helpers) => {
      const n = typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : NaN;
      return n >= 1 && n <= LIMITS.pageSizeMax ? n : helpers.error('number.range');
    })
    .default(LIMITS.pageSizeDefault)
    .meta({
      'x-schema': {
        $replace: true,
        description: `1 to ${LIMITS.pageSizeMax}, default ${LIMITS.pageSizeDefault}`,
        type: 'integer',
        minimum: 1,
        maximum: LIMITS.pageSizeMax,
        default: LIMITS.pageSizeDefault,
      },
    })
    .error(() => pageRefusal('limit', LIMIT_MESSAGE, LIMIT_MESSAGE, 'number.range')),
  cursor: Joi.any()
    .custom((value: unknown, helpers) =>
      isUuid(value) ? value.toLowerCase() : helpers.error('string.guid'),
    )
    .default(null)
    .meta({
      'x-schema': {
        $replace: true,
        description: 'next_cursor of the previous page',
        type: 'string',
        format: 'uuid',
      },
    })
    .error(() =>
      pageRefusal(
        'cursor',
        'cursor must be a next_cursor from a previous page',
        'cursor must be a UUID',
        'string.guid',
      ),
    ),
};
/** A query: these keys; others are ignored (as they always were). */
export const querySchema = (keys: Joi.PartialSchemaMap) => Joi.object(keys).unknown(true);
export const PAGE_QUERY = querySchema(PAGE_KEYS);

/** An instant with an explicit offset or Z (rule 5), as epoch ms; else the field's own refusal. */
export const instantWithOffset = (refusal: () => Error, description: string) =>
  Joi.any()
    .custom(
      (value: unknown, helpers) => parseInstantWithOffset(value) ?? helpers.error('any.invalid'),
    )
    .meta({ 'x-schema': { $replace: true, description, type: 'string', format: 'date-time' } })
    .error(refusal);
