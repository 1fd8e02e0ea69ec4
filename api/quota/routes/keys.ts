import type Router from '@koa/router';
import Joi from 'joi';
import {
  listTenantKeys,
  mintKey,
  patchKey,
  revokeKey,
  rotateKey,
} from '../../../services/quota/keys';
import { ApiKeyMinted, ApiKeyOut } from '../models';
import { TENANT_SCOPE_NAMES } from '../../../services/quota/scopes';
import { actor, body, id, keyName, prefix } from '../../../services/quota/schemas';
import {
  mountOperation,
  operation,
  principalOf,
  validated,
  type QuotaRouteDeps,
} from './operation';

const keyParams = Joi.object({ key_row_id: id().required() });
const constraints = Joi.object({
  plan_ids: Joi.array().items(id()).min(1).unique().allow(null),
  subject_prefix: prefix().allow(null),
  catalog_name_prefix: prefix().allow(null),
})
  .allow(null)
  .id('KeyConstraintsIn');

export const KEY_OPERATIONS = {
  list: operation({
    method: 'get',
    path: '/v1/api-keys',
    operationId: 'listApiKeys',
    summary: "The tenant's keys, oldest first (never their secrets)",
    tags: ['api-keys'],
    access: 'keys:read',
    responses: { '200': { description: 'keys', schema: Joi.array().items(ApiKeyOut) } },
  }),
  mint: operation({
    method: 'post',
    path: '/v1/api-keys',
    operationId: 'mintApiKey',
    summary: 'Mint a key (its secret is in this answer only)',
    description:
      "A key gives only what it holds: scopes it has and constraints at least as tight as its own (403 scope_escalation). An actor other than the minting key's is recorded with the issuer in created_by_actor.",
    tags: ['api-keys'],
    access: 'keys:write',
    request: {
      body: body({
        name: keyName().default(''),
        scopes: Joi.array()
          .items(Joi.string().valid(...TENANT_SCOPE_NAMES))
          .min(1)
          .unique()
          .required(),
        actor: actor().required(),
        constraints,
      }).id('ApiKeyCreate'),
    },
    responses: {
      '201': { description: 'minted', schema: ApiKeyMinted },
    },
    refusals: { 403: ['scope_escalation'] },
  }),
  patch: operation({
    method: 'patch',
    path: '/v1/api-keys/{key_row_id}',
    operationId: 'patchApiKey',
    summary: 'Rename a key or tighten its constraints in place (same secret)',
    description:
      "Constraints only tighten: a looser set (or one looser than the patching key's) is 403 scope_escalation; a looser key is a new key. A revoked key is 409 key_revoked.",
    tags: ['api-keys'],
    access: 'keys:write',
    request: {
      params: keyParams,
      body: body({ name: keyName().allow(null), constraints }).id('ApiKeyPatch'),
    },
    responses: {
      '200': { description: 'the key', schema: ApiKeyOut },
    },
    refusals: { 404: ['key_not_found'], 409: ['key_revoked'] },
  }),
  revoke: operation({
    method: 'delete',
    path: '/v1/api-keys/{key_row_id}',
    operationId: 'revokeApiKey',
    summary: 'Revoke a key: 401 from its next request',
    description: 'Revoking a revoked key answers it as it is.',
    tags: ['api-keys'],
    access: 'keys:write',
    request: { params: keyParams },
    responses: {
      '200': { description: 'the revoked key', schema: ApiKeyOut },
    },
    refusals: { 404: ['key_not_found'] },
  }),
  rotate: operation({
    method: 'post',
    path: '/v1/api-keys/{key_row_id}/rotate',
    operationId: 'rotateApiKey',
    summary: 'A new secret on the same key row; the old one fails from the next request',
    tags: ['api-keys'],
    access: 'keys:write',
    request: { params: keyParams },
    responses: {
      '200': { description: 'the key and its new secret', schema: ApiKeyMinted },
    },
    refusals: { 404: ['key_not_found'], 409: ['key_revoked'] },
  }),
} as const;

type KeyRowId = { key_row_id: string };

export function mountKeyRoutes(router: Router, deps: QuotaRouteDeps): void {
  const ops = KEY_OPERATIONS;
  mountOperation(router, deps, ops.list, async (ctx) => {
    ctx.body = await listTenantKeys(deps, principalOf(ctx));
  });
  mountOperation(router, deps, ops.mint, async (ctx) => {
    ctx.status = 201;
    ctx.body = await mintKey(deps, principalOf(ctx), validated(ctx, 'body'));
  });
  mountOperation(router, deps, ops.patch, async (ctx) => {
    const { key_row_id } = validated<KeyRowId>(ctx, 'params');
    ctx.body = await patchKey(deps, principalOf(ctx), key_row_id, validated(ctx, 'body'));
  });
  mountOperation(router, deps, ops.revoke, async (ctx) => {
    ctx.body = await revokeKey(
      deps,
      principalOf(ctx),
      validated<KeyRowId>(ctx, 'params').key_row_id,
    );
  });
  mountOperation(router, deps, ops.rotate, async (ctx) => {
    ctx.body = await rotateKey(
      deps,
      principalOf(ctx),
      validated<KeyRowId>(ctx, 'params').key_row_id,
    );
  });
}
