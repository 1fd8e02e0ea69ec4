import { ledgerError, type LedgerErrorCode } from './errors';
import type { DomainError } from '../../platform/errors';

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

/** A page of a list, as PAGE_QUERY (schemas.ts) validates `limit` and `cursor`. */
export interface Page {
  limit: number;
  cursor: string | null;
}

/** Fetch limit+1 rows; the extra one says whether a next page exists. */
export function pageOf<T>(
  rows: readonly T[],
  limit: number,
  idOf: (row: T) => string,
): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, next_cursor: rows.length > limit ? idOf(items[items.length - 1]!) : null };
}
