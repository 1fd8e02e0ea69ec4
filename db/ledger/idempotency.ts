import { sql, type DatabasePool } from '../pool';
import { withTenant, type Tx } from './context';

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
  return withTenant(pool, scope.tenantId, async (tx) => {
    const claimed: unknown = await tx.maybeOneFirst(sql.unsafe`
      INSERT INTO ledger.idempotency_keys AS k (tenant_id, endpoint, key, request_sha256, state, locked_until)
      VALUES (${scope.tenantId}, ${scope.endpoint}, ${scope.key}, ${sql.binary(requestSha256)}, 'in_flight',
              now() + make_interval(secs => ${lockMs / 1000}))
      ON CONFLICT (tenant_id, endpoint, key) DO UPDATE SET locked_until = EXCLUDED.locked_until
        WHERE k.state = 'in_flight' AND k.locked_until < now() AND k.request_sha256 = EXCLUDED.request_sha256
      RETURNING true`);
    if (claimed) return { kind: 'claimed' };
    const existing = (await tx.one(sql.unsafe`
      SELECT request_sha256, state, response_status, response_body FROM ledger.idempotency_keys
      WHERE tenant_id = ${scope.tenantId} AND endpoint = ${scope.endpoint} AND key = ${scope.key}`)) as {
      request_sha256: Buffer | string;
      state: string;
      response_status: number | null;
      response_body: unknown;
    };
    const stored = Buffer.isBuffer(existing.request_sha256)
      ? existing.request_sha256
      : Buffer.from(String(existing.request_sha256).slice(2), 'hex');
    if (!stored.equals(requestSha256)) return { kind: 'mismatch' };
    if (existing.state === 'in_flight') return { kind: 'in_flight' };
    return { kind: 'replay', status: existing.response_status!, body: existing.response_body };
  });
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
