import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { LedgerEntryInput } from '../../../db/quota/consumption';

/**
 * What a spending request leaves behind, whichever path decided it: its idempotency hash and its
 * consumption-ledger entries.
 */

/** What an idempotency key's replays must send again: the SHA-256 of the canonical body. */
export const requestHashOf = (body: object) =>
  createHash('sha256')
    .update(canonicalize(body) ?? '')
    .digest();

/** A request's metadata as stored: none when it sent none or an empty object. */
export const storedMetadata = (metadata: Record<string, unknown> | undefined) =>
  metadata && Object.keys(metadata).length > 0 ? metadata : null;

/** One signed entry per resource of an event (the amounts already signed by the caller). */
export function ledgerEntries(
  base: {
    tenantId: string;
    eventId: string;
    subject: string;
    body: { idempotency_key?: string | null; metadata?: Record<string, unknown> };
    reservationId?: string;
  },
  amounts: Map<string, bigint>,
  entryType: LedgerEntryInput['entryType'],
): LedgerEntryInput[] {
  const occurredAt = new Date().toISOString();
  return [...amounts].map(([resource, amount]) => ({
    tenantId: base.tenantId,
    eventId: base.eventId,
    subject: base.subject,
    resource,
    amount,
    entryType,
    idempotencyKey: base.body.idempotency_key ?? null,
    reservationId: base.reservationId ?? null,
    strictDeferred: false,
    metadata: storedMetadata(base.body.metadata),
    occurredAt,
  }));
}
