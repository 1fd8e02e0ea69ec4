import { v7 as uuidv7 } from 'uuid';
import { ledgerError } from './errors';
import { UniqueIntegrityConstraintViolationError } from 'slonik';
import type { DatabasePool } from '../../db/pool';
import { withTenant } from '../../db/ledger/context';
import {
  findAssetType,
  insertAssetType,
  listAssetTypes,
  updateAssetType,
  type AssetKind,
  type AssetStatus,
} from '../../db/ledger/accounts';
import { isUuid } from './validation';

export const ASSET_KINDS: readonly AssetKind[] = ['fiat', 'credit', 'inventory'];
/** Fields a PATCH may not name (422 IMMUTABLE_FIELD, routes/asset-types.ts), in the order named. */
export const IMMUTABLE_ASSET_FIELDS = ['code', 'kind', 'scale'];

export const assetTypeNotFound = () =>
  ledgerError('ASSET_TYPE_NOT_FOUND', { message: 'asset type not found' });

/** A request validated by routes/asset-types.ts (ASSET_TYPE_CREATE). */
export interface AssetTypeInput {
  code: string;
  kind: AssetKind;
  scale: number;
  description?: string | null;
}

export async function createAssetType(pool: DatabasePool, tenantId: string, input: AssetTypeInput) {
  const description = input.description ?? null;
  try {
    const row = await withTenant(pool, tenantId, (tx) =>
      insertAssetType(tx, {
        assetTypeId: uuidv7(),
        tenantId,
        code: input.code,
        kind: input.kind,
        scale: input.scale,
        description,
      }),
    );
    return row;
  } catch (error) {
    if (error instanceof UniqueIntegrityConstraintViolationError) {
      throw ledgerError('CONSTRAINT_VIOLATION', {
        message: `asset type code ${input.code} exists`,
        details: { code: input.code },
        cause: error,
      });
    }
    throw error;
  }
}

export function getAssetTypes(pool: DatabasePool, tenantId: string) {
  return withTenant(pool, tenantId, (tx) => listAssetTypes(tx));
}

export async function patchAssetType(
  pool: DatabasePool,
  tenantId: string,
  assetTypeId: string,
  body: { status?: AssetStatus; description?: string | null },
) {
  if (!isUuid(assetTypeId)) throw assetTypeNotFound();
  return withTenant(pool, tenantId, async (tx) => {
    if (!(await findAssetType(tx, assetTypeId, true))) throw assetTypeNotFound();
    return updateAssetType(tx, assetTypeId, {
      status: body.status,
      description: body.description,
    });
  });
}
