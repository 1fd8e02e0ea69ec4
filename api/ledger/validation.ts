import canonicalize from 'canonicalize';
import { ledgerError, type LedgerErrorCode } from './errors';
import type { DomainError } from '../platform/errors';

/** Limits of the spec's Limits table, one named constant each. */
export const LIMITS = {
  metadataBytesMax: 16 * 1024,
  descriptionCharsMax: 1024,
  nameCharsMax: 255,
  externalIdCharsMax: 255,
  labelCharsMax: 255,
  contactEmailCharsMax: 255,
  idempotencyKeyCharsMax: 255,
  entriesMin: 2,
  entriesMax: 100,
  scaleMax: 12,
  pageSizeMax: 1000,
  pageSizeDefault: 100,
  assetCodeCharsMax: 64,
  ttlDaysMax: 3650,
} as const;

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (value: unknown): value is string =>
  typeof value === 'string' && UUID_PATTERN.test(value);

export function invalid(code: LedgerErrorCode, message: string, details?: unknown): DomainError {
  return ledgerError(code, { message, details });
}

/** metadata: a JSON object of at most 16 KiB in RFC 8785 canonical form. */
export function checkMetadata(value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalid('INVALID_METADATA', 'metadata must be a JSON object');
  }
  const canonical = canonicalize(value) ?? '';
  const bytes = Buffer.byteLength(canonical, 'utf8');
  if (bytes > LIMITS.metadataBytesMax) {
    throw invalid(
      'INVALID_METADATA',
      `metadata is ${bytes} bytes in canonical JSON; at most ${LIMITS.metadataBytesMax}`,
    );
  }
  return value as Record<string, unknown>;
}

/** A string field under a length limit, with the field's own error code. */
export function checkText(
  value: unknown,
  field: string,
  maxChars: number,
  code: LedgerErrorCode,
  options: { required?: boolean; allowNull?: boolean } = {},
): string | null | undefined {
  if (value === undefined) {
    if (options.required) throw invalid(code, `${field} is required`);
    return undefined;
  }
  if (value === null && options.allowNull) return null;
  if (typeof value !== 'string') throw invalid(code, `${field} must be a string`);
  if ([...value].length > maxChars)
    throw invalid(code, `${field} is longer than ${maxChars} chars`);
  return value;
}

export interface Page {
  limit: number;
  cursor: string | null;
}

/** `limit` 1..1000 (default 100), `cursor` a UUIDv7 from a previous page. */
export function parsePage(query: Record<string, unknown>): Page {
  const limitText = query.limit;
  let limit: number = LIMITS.pageSizeDefault;
  if (limitText !== undefined) {
    if (
      typeof limitText !== 'string' ||
      !/^\d{1,6}$/.test(limitText) ||
      Number(limitText) < 1 ||
      Number(limitText) > LIMITS.pageSizeMax
    ) {
      throw ledgerError('INVALID_REQUEST', {
        message: `limit must be an integer from 1 to ${LIMITS.pageSizeMax}`,
        details: [
          {
            field: 'limit',
            location: 'query',
            message: `limit must be an integer from 1 to ${LIMITS.pageSizeMax}`,
            type: 'number.range',
          },
        ],
      });
    }
    limit = Number(limitText);
  }
  const cursor = query.cursor;
  if (cursor !== undefined && !isUuid(cursor)) {
    throw ledgerError('INVALID_REQUEST', {
      message: 'cursor must be a next_cursor from a previous page',
      details: [
        {
          field: 'cursor',
          location: 'query',
          message: 'cursor must be a UUID',
          type: 'string.guid',
        },
      ],
    });
  }
  return { limit, cursor: cursor === undefined ? null : cursor.toLowerCase() };
}

/** Fetch limit+1 rows; the extra one says whether a next page exists. */
export function pageOf<T>(
  rows: T[],
  limit: number,
  idOf: (row: T) => string,
): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, next_cursor: rows.length > limit ? idOf(items[items.length - 1]!) : null };
}
