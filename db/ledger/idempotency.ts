import { z } from 'zod';
import { sql, type DatabasePool } from '../pool';
import { mapDatabaseError, withTenant, type Tx } from './context';

/** How long a claimed key blocks a concurrent duplicate before a retry may take it over. */
export const IDEMPOTENCY_LOCK_MS = 30_000;

export interface IdempotencyScope {
  tenantId: string;
  endpoint: string;
  key: string;
}

export type ClaimResult =
  | { kind: 'claimed' }
  | { kind: 'mismatch' }
  | { kind: 'in_flight' }
  | { kind: 'replay'; status: number; body: unknown };

/** A row of ledger.claim_idempotency_key: claimed, or the key's row as it stands. */
const idempotencyClaimRow = z.object({
  claimed: z.boolean(),
  request_sha256: z.instanceof(Buffer),
  state: z.string(),
  response_status: z.number().nullable(),
  /** jsonb: the recorded response's body. */
  response_body: z.unknown(),
});

/**
 * Takes the key for this request, or says why not. A stale in-flight claim (its holder died
 * before finishing) is taken over after `lockMs` when the request is the same.
 */
export async function claimIdempotencyKey(
  pool: DatabasePool,
  scope: IdempotencyScope,
  requestSha256: Buffer,
  lockMs: number,
): Promise<ClaimResult> {
  let row: z.infer<typeof idempotencyClaimRow>;
  try {
    row = await pool.one(sql.type(idempotencyClaimRow)`
      SELECT * FROM ledger.claim_idempotency_key(${scope.tenantId}::uuid, ${scope.endpoint}, ${scope.key},
                                                 ${sql.binary(requestSha256)}, ${lockMs}::int)`);
  } catch (error) {
    throw mapDatabaseError(error);
  }
  return claimOutcome(row, requestSha256);
}

/** What a claim row means for this request: claimed, replay, in flight, or another request's key. */
export function claimOutcome(
  row: {
    claimed: boolean | null;
    request_sha256: Buffer | string | null;
    state: string | null;
    response_status: number | null;
    response_body?: unknown;
  },
  requestSha256: Buffer,
): ClaimResult {
  if (row.claimed) return { kind: 'claimed' };
  const stored = Buffer.isBuffer(row.request_sha256)
    ? row.request_sha256
    : Buffer.from(String(row.request_sha256).slice(2), 'hex');
  if (!stored.equals(requestSha256)) return { kind: 'mismatch' };
  if (row.state === 'in_flight') return { kind: 'in_flight' };
  return { kind: 'replay', status: row.response_status!, body: row.response_body };
}

export async function completeIdempotencyKey(
  tx: Tx,
  scope: IdempotencyScope,
  status: number,
  body: unknown,
): Promise<void> {
  await tx.query(sql.unsafe`
    UPDATE ledger.idempotency_keys SET state = 'completed', response_status = ${status}, response_body = ${sql.jsonb(body as never)}
    WHERE tenant_id = ${scope.tenantId} AND endpoint = ${scope.endpoint} AND key = ${scope.key}`);
}

/** A transient failure frees the key so the client's retry with the same key runs again. */
export async function releaseIdempotencyKey(
  pool: DatabasePool,
  scope: IdempotencyScope,
): Promise<void> {
  await withTenant(pool, scope.tenantId, (tx) =>
    tx.query(sql.unsafe`
      DELETE FROM ledger.idempotency_keys
      WHERE tenant_id = ${scope.tenantId} AND endpoint = ${scope.endpoint} AND key = ${scope.key} AND state = 'in_flight'`),
  );
}
