import type Router from '@koa/router';
import Joi from 'joi';
import {
  ASSET_KINDS,
  assetTypeNotFound,
  createAssetType,
  getAssetTypes,
  IMMUTABLE_ASSET_FIELDS,
  patchAssetType,
  type AssetTypeInput,
} from '../../../services/ledger/asset-types';
import { AssetType, AssetTypeList } from '../models';
import { bodySchema, idParams, text } from '../../../services/ledger/schemas';
import { invalid, LIMITS } from '../../../services/ledger/validation';
import {
  malformedIdNotFound,
  mountOperation,
  operation,
  paramOf,
  principalOf,
  validated,
  type LedgerRouteDeps,
} from './operation';

export const ASSET_TYPE_CREATE = bodySchema({
  code: Joi.string()
    .min(1)
    .max(LIMITS.assetCodeCharsMax)
    .pattern(/^[A-Za-z0-9._:-]+$/)
    .required()
    .description('unique per tenant; immutable'),
  kind: Joi.string()
    .valid(...ASSET_KINDS)
    .required()
    .description(
      'fiat, credit or inventory (a commodity or crypto-asset held as stock is inventory); else 422 INVALID_ASSET_TYPE',
    )
    .error(() =>
      invalid(
        'INVALID_ASSET_TYPE',
        `kind must be one of ${ASSET_KINDS.join(', ')}; a commodity or crypto-asset held as stock is inventory`,
      ),
    ),
  scale: Joi.number()
    .integer()
    .strict()
    .min(0)
    .max(LIMITS.scaleMax)
    .required()
    .description('decimal places; immutable'),
  description: text('description', LIMITS.descriptionCharsMax, 'INVALID_DESCRIPTION').allow(null),
}).id('AssetTypeCreate');

export const ASSET_TYPE_PATCH = bodySchema(
  {
    status: Joi.string().valid('active', 'superseded'),
    description: text('description', LIMITS.descriptionCharsMax, 'INVALID_DESCRIPTION').allow(null),
  },
  {
    // Naming an immutable field is its own refusal, of all those named (in this order).
    claims: (key) => IMMUTABLE_ASSET_FIELDS.includes(key),
    refuse: (keys) => {
      const fields = IMMUTABLE_ASSET_FIELDS.filter((f) => keys.includes(f));
      return invalid('IMMUTABLE_FIELD', `${fields.join(', ')} cannot change`, { fields });
    },
  },
)
  .min(1)
  .description('status and/or description only; naming code, kind or scale is 422 IMMUTABLE_FIELD')
  .id('AssetTypePatch');

export const ASSET_TYPE_OPERATIONS = {
  createAssetType: operation({
    method: 'post',
    path: '/v1/asset-types',
    summary: 'Create asset type',
    role: 'ledger_admin',
    mutating: {},
    request: { body: ASSET_TYPE_CREATE },
    ok: ['201', 'created', AssetType],
    description: 'A duplicate code is 422 CONSTRAINT_VIOLATION.',
  }),
  listAssetTypes: operation({
    method: 'get',
    path: '/v1/asset-types',
    summary: 'List asset types',
    role: 'ledger_reader',
    ok: ['200', 'all asset types, unpaginated, newest first', AssetTypeList],
  }),
  patchAssetType: operation({
    method: 'patch',
    path: '/v1/asset-types/{asset_type_id}',
    summary: 'Update asset type',
    role: 'ledger_admin',
    mutating: { keyPath: '/v1/asset-types/{id}' },
    request: { params: idParams('asset_type_id', 'asset type id'), body: ASSET_TYPE_PATCH },
    ok: ['200', 'the asset type', AssetType],
    errors: { '404': 'ASSET_TYPE_NOT_FOUND' },
  }),
};

export function mountAssetTypeRoutes(router: Router, deps: LedgerRouteDeps): void {
  const { pool } = deps;
  const ops = ASSET_TYPE_OPERATIONS;
  mountOperation(router, deps, ops.createAssetType, async (ctx) => {
    const body = validated<AssetTypeInput>(ctx, 'body');
    ctx.status = 201;
    ctx.body = await createAssetType(pool, principalOf(ctx).tenantId, body);
  });
  mountOperation(router, deps, ops.listAssetTypes, async (ctx) => {
    ctx.body = { asset_types: await getAssetTypes(pool, principalOf(ctx).tenantId) };
  });
  mountOperation(
    router,
    deps,
    ops.patchAssetType,
    async (ctx) => {
      ctx.body = await patchAssetType(
        pool,
        principalOf(ctx).tenantId,
        paramOf(ctx, 'asset_type_id'),
        validated(ctx, 'body'),
      );
    },
    {
      after: [
        malformedIdNotFound(
          'asset_type_id',
          ASSET_TYPE_PATCH,
          ['INVALID_DESCRIPTION'],
          assetTypeNotFound,
        ),
      ],
    },
  );
}
