import { z } from 'zod';
import { selectOneRow, sql } from '../pool';
import type { Tx } from './context';

const FREEZE_COLUMNS = sql.fragment`tenant_id, asset_type_id, reason, retry_after_seconds, frozen_at`;
/** A posting freeze (migration 0015): of a whole tenant (asset_type_id null) or of one asset type. */
export const postingFreezeRow = z.object({
  tenant_id: z.string(),
  asset_type_id: z.string().nullable(),
  reason: z.string().nullable(),
  retry_after_seconds: z.number(),
  frozen_at: z.string(),
});
export type PostingFreezeRow = z.infer<typeof postingFreezeRow>;

/** Sets a freeze, or updates the reason and retry delay of the one there. System context. */
export async function freezePosting(
  tx: Tx,
  freeze: {
    tenantId: string;
    assetTypeId: string | null;
    reason: string | null;
    retryAfterSeconds: number;
  },
): Promise<PostingFreezeRow> {
  return tx.one(sql.type(postingFreezeRow)`
    INSERT INTO ledger.posting_freezes (tenant_id, asset_type_id, reason, retry_after_seconds)
    VALUES (${freeze.tenantId}, ${freeze.assetTypeId}, ${freeze.reason}, ${freeze.retryAfterSeconds})
    ON CONFLICT (tenant_id, asset_type_id) DO UPDATE
      SET reason = EXCLUDED.reason, retry_after_seconds = EXCLUDED.retry_after_seconds
    RETURNING ${FREEZE_COLUMNS}`);
}

/** Lifts a freeze; null when there was none of that scope. System context. */
export async function unfreezePosting(
  tx: Tx,
  tenantId: string,
  assetTypeId: string | null,
): Promise<PostingFreezeRow | null> {
  return tx.maybeOne(sql.type(postingFreezeRow)`
    DELETE FROM ledger.posting_freezes
    WHERE tenant_id = ${tenantId} AND asset_type_id IS NOT DISTINCT FROM ${assetTypeId}::uuid
    RETURNING ${FREEZE_COLUMNS}`);
}

/** Freezes in place, of one tenant or of all, oldest first. System context. */
export async function listPostingFreezes(
  tx: Tx,
  tenantId: string | null,
): Promise<readonly PostingFreezeRow[]> {
  return tx.any(sql.type(postingFreezeRow)`
    SELECT ${FREEZE_COLUMNS} FROM ledger.posting_freezes
    WHERE ${tenantId}::uuid IS NULL OR tenant_id = ${tenantId}::uuid
    ORDER BY frozen_at, tenant_id, asset_type_id NULLS FIRST`);
}

/**
 * Whether a freeze's scope exists: the tenant, and the asset type of that tenant when one is
 * named. System context.
 */
export async function freezeScopeExists(
  tx: Tx,
  tenantId: string,
  assetTypeId: string | null,
): Promise<boolean> {
  const row = await tx.maybeOne(sql.type(selectOneRow)`
    SELECT 1 FROM ledger.tenants t
    WHERE t.tenant_id = ${tenantId}
      AND (${assetTypeId}::uuid IS NULL OR EXISTS (
        SELECT 1 FROM ledger.asset_types a
        WHERE a.tenant_id = t.tenant_id AND a.asset_type_id = ${assetTypeId}::uuid))`);
  return row !== null;
}
