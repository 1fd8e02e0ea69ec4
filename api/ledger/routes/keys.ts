import type Router from '@koa/router';
import Joi from 'joi';
import { Key, KeyIssued, KeyList } from '../models';
import {
  bodySchema,
  PAGE_QUERY,
  pathId,
  text,
  unknownFields,
} from '../../../services/ledger/schemas';
import {
  createSubTenantKey,
  getSubTenantKeys,
  revokeSubTenantKey,
  SUB_TENANT_KEY_ROLES,
} from '../../../services/ledger/sub-tenants';
import { invalid, LIMITS, type Page } from '../../../services/ledger/validation';
import {
  mountOperation,
  operation,
  paramOf,
  principalOf,
  validated,
  type LedgerRouteDeps,
} from './operation';
import { subTenantParams } from './sub-tenants';

export const KEY_CREATE = bodySchema(
  {
    label: text('label', LIMITS.labelCharsMax, 'INVALID_KEY').allow(null),
    role: Joi.string()
      .valid(...SUB_TENANT_KEY_ROLES)
      .required()
      .description('a client key cannot be a partner key (depth is capped at one)')
      .error(() =>
        invalid('INVALID_KEY', `role must be one of ${SUB_TENANT_KEY_ROLES.join(', ')}`),
      ),
    ttl_days: Joi.number()
      .integer()
      .strict()
      .min(1)
      .max(LIMITS.ttlDaysMax)
      .allow(null)
      .description('omitted or null = no expiry; past it 401 CREDENTIAL_EXPIRED')
      .error(() =>
        invalid('INVALID_KEY', `ttl_days must be an integer from 1 to ${LIMITS.ttlDaysMax}`),
      ),
  },
  unknownFields('INVALID_KEY'),
).id('KeyCreate');

export const KEY_OPERATIONS = {
  issueSubTenantKey: operation({
    method: 'post',
    path: '/v1/sub-tenants/{sub_tenant_id}/keys',
    summary: 'Issue sub-tenant key',
    role: 'ledger_partner',
    mutating: { keyPath: '/v1/sub-tenants/{id}/keys' },
    request: { params: subTenantParams, body: KEY_CREATE },
    ok: ['201', 'the key with its secret, shown once', KeyIssued],
    errors: { '404': 'SUB_TENANT_NOT_FOUND' },
  }),
  listSubTenantKeys: operation({
    method: 'get',
    path: '/v1/sub-tenants/{sub_tenant_id}/keys',
    summary: 'List sub-tenant keys',
    role: 'ledger_partner',
    request: { params: subTenantParams, query: PAGE_QUERY },
    ok: ['200', 'newest first, without secrets', KeyList],
    errors: { '404': 'SUB_TENANT_NOT_FOUND' },
  }),
  revokeSubTenantKey: operation({
    method: 'delete',
    path: '/v1/sub-tenants/{sub_tenant_id}/keys/{key_id}',
    summary: 'Revoke sub-tenant key',
    role: 'ledger_partner',
    mutating: { keyPath: '/v1/sub-tenants/{id}/keys/{key_id}' },
    request: {
      params: Joi.object({
        sub_tenant_id: pathId('sub-tenant id').required(),
        key_id: pathId('key id').required(),
      }),
    },
    ok: ['200', 'the revoked key (idempotent: the first revocation time is kept)', Key],
    errors: {
      '404': 'SUB_TENANT_NOT_FOUND, KEY_NOT_FOUND',
      '502':
        "REVOCATION_FAILED: the database refused the revocation (the key's row locked past the 2 s lock budget, the statement budget, any other refusal); nothing changed and the key still works. The Idempotency-Key is released, so a retry with it runs again",
    },
  }),
};

/** A sub-tenant's keys, issued, listed and revoked by its partner. */
export function mountKeyRoutes(router: Router, deps: LedgerRouteDeps): void {
  const { pool } = deps;
  const ops = KEY_OPERATIONS;
  mountOperation(router, deps, ops.issueSubTenantKey, async (ctx) => {
    ctx.status = 201;
    ctx.body = await createSubTenantKey(
      pool,
      principalOf(ctx),
      paramOf(ctx, 'sub_tenant_id'),
      validated(ctx, 'body'),
    );
  });
  mountOperation(router, deps, ops.listSubTenantKeys, async (ctx) => {
    ctx.body = await getSubTenantKeys(
      pool,
      principalOf(ctx),
      paramOf(ctx, 'sub_tenant_id'),
      validated<Page>(ctx, 'query'),
    );
  });
  mountOperation(router, deps, ops.revokeSubTenantKey, async (ctx) => {
    ctx.body = await revokeSubTenantKey(
      pool,
      principalOf(ctx),
      paramOf(ctx, 'sub_tenant_id'),
      paramOf(ctx, 'key_id'),
    );
  });
}
