import { z } from 'zod';
import { selectOneRow, sql } from '../pool';
import type { Queryable } from './queryable';

export const idempotencyRecord = z.object({
  request_hash_hex: z.string(),
  /** smallint. */
  status: z.number(),
  /** The answer as JSON text: jsonb keeps integers of any size, text hands them back exact. */
  response_text: z.string(),
});
export type IdempotencyRecord = z.infer<typeof idempotencyRecord>;

/**
 * Claims an idempotency key in the caller's transaction: null when this transaction claimed it
 * (its answer is written with `recordAnswer` before commit), else the answer recorded for it. A
 * concurrent request with the same key waits on the key's row until this one commits, then reads
 * its answer: the request is decided once.
 */
export async function claimKey(
  db: Queryable,
  key: { tenantId: string; endpoint: string; key: string; requestHash: Buffer },
): Promise<IdempotencyRecord | null> {
  const claimed = await db.maybeOneFirst(sql.type(selectOneRow)`
    INSERT INTO quota.idempotency (tenant_id, endpoint, key, request_hash, status, response)
    VALUES (${key.tenantId}, ${key.endpoint}, ${key.key}, ${sql.binary(key.requestHash)}, 0, 'null')
    ON CONFLICT DO NOTHING RETURNING 1`);
  if (claimed !== null) return null;
  return db.one(sql.type(idempotencyRecord)`
    SELECT encode(request_hash, 'hex') AS request_hash_hex, status, response::text AS response_text
    FROM quota.idempotency
    WHERE tenant_id = ${key.tenantId} AND endpoint = ${key.endpoint} AND key = ${key.key}`);
}

export async function recordAnswer(
  db: Queryable,
  key: { tenantId: string; endpoint: string; key: string },
  answer: { status: number; responseJson: string },
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE quota.idempotency SET status = ${answer.status}, response = ${answer.responseJson}::jsonb
    WHERE tenant_id = ${key.tenantId} AND endpoint = ${key.endpoint} AND key = ${key.key}`);
}
