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
import { checkText, invalid, isUuid, LIMITS } from './validation';

export const ASSET_KINDS: readonly AssetKind[] = ['fiat', 'credit', 'inventory'];
const IMMUTABLE_ASSET_FIELDS = ['code', 'kind', 'scale'];

const notFound = () => ledgerError('ASSET_TYPE_NOT_FOUND', { message: 'asset type not found' });

export async function createAssetType(
  pool: DatabasePool,
  tenantId: string,
  input: { code: string; kind: unknown; scale: number; description?: string | null },
) {
  if (!ASSET_KINDS.includes(input.kind as AssetKind)) {
    throw invalid(
      'INVALID_ASSET_TYPE',
      `kind must be one of ${ASSET_KINDS.join(', ')}; a commodity or crypto-asset held as stock is inventory`,
    );
  }
  const description =
    checkText(input.description, 'description', LIMITS.descriptionCharsMax, 'INVALID_DESCRIPTION', {
      allowNull: true,
    }) ?? null;
  try {
    const row = await withTenant(pool, tenantId, (tx) =>
      insertAssetType(tx, {
        assetTypeId: uuidv7(),
        tenantId,
        code: input.code,
        kind: input.kind as AssetKind,
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
  body: Record<string, unknown>,
) {
  const immutable = IMMUTABLE_ASSET_FIELDS.filter((f) => f in body);
  if (immutable.length > 0) {
    throw invalid('IMMUTABLE_FIELD', `${immutable.join(', ')} cannot change`, {
      fields: immutable,
    });
  }
  if (!isUuid(assetTypeId)) throw notFound();
  const description = checkText(
    body.description,
    'description',
    LIMITS.descriptionCharsMax,
    'INVALID_DESCRIPTION',
    { allowNull: true },
  );
  return withTenant(pool, tenantId, async (tx) => {
    if (!(await findAssetType(tx, assetTypeId, true))) throw notFound();
    return updateAssetType(tx, assetTypeId, {
      status: body.status as AssetStatus | undefined,
      description,
    });
  });
}
