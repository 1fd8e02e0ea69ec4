import type Router from '@koa/router';
import Joi from 'joi';
import type { Context, Next } from 'koa';
import { SubTenant, SubTenantList } from '../models';
import {
  bodySchema,
  idParams,
  PAGE_QUERY,
  text,
  unknownFields,
} from '../../../services/ledger/schemas';
import {
  assertRootPartner,
  createSubTenant,
  getSubTenants,
  patchSubTenant,
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

export const subTenantParams = idParams('sub_tenant_id', 'sub-tenant id');

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
/** A name of blanks only is no name (422 INVALID_TENANT): some character other than whitespace. */
const SUB_TENANT_NAME_SCHEMA = {
  description: 'at least one character that is not whitespace',
  minLength: 1,
  pattern: '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$',
};
const subTenantName = (blank: string, required: boolean) =>
  text('name', LIMITS.nameCharsMax, 'INVALID_TENANT', { blank, required }).meta({
    'x-schema': SUB_TENANT_NAME_SCHEMA,
  });

export const SUB_TENANT_CREATE = bodySchema(
  {
    name: subTenantName('name is required', true),
    kind: Joi.string()
      .valid('production', 'sandbox')
      .required()
      .description('immutable')
      .error(() => invalid('INVALID_TENANT', 'kind must be production or sandbox')),
    contact_email: text('contact_email', LIMITS.contactEmailCharsMax, 'INVALID_TENANT', {
      required: true,
      check: { test: (v) => EMAIL.test(v), message: 'contact_email must be an email address' },
    }).meta({ 'x-schema': { format: 'email' } }),
  },
  unknownFields('INVALID_TENANT'),
).id('SubTenantCreate');

export const SUB_TENANT_PATCH = bodySchema(
  {
    name: subTenantName('name cannot be empty', false),
    status: Joi.string()
      .valid('active', 'suspended')
      .error(() => invalid('INVALID_TENANT', 'status must be active or suspended')),
  },
  {
    // kind is the sub-tenant's immutable field: its own refusal, before any unknown field's.
    refuse: (keys) =>
      keys.includes('kind')
        ? invalid('IMMUTABLE_FIELD', 'kind cannot change', { fields: ['kind'] })
        : invalid('INVALID_TENANT', `unknown fields: ${keys.join(', ')}`),
  },
).id('SubTenantPatch');

export const SUB_TENANT_OPERATIONS = {
  createSubTenant: operation({
    method: 'post',
    path: '/v1/sub-tenants',
    summary: 'Create sub-tenant',
    role: 'ledger_partner',
    mutating: {},
    request: { body: SUB_TENANT_CREATE },
    ok: ['201', 'created', SubTenant],
    description:
      'Only a root tenant may have sub-tenants (depth one): otherwise 422 INVALID_TENANT. Malformed fields are 422 INVALID_TENANT.',
  }),
  listSubTenants: operation({
    method: 'get',
    path: '/v1/sub-tenants',
    summary: 'List sub-tenants',
    role: 'ledger_partner',
    request: { query: PAGE_QUERY },
    ok: ['200', 'newest first', SubTenantList],
  }),
  patchSubTenant: operation({
    method: 'patch',
    path: '/v1/sub-tenants/{sub_tenant_id}',
    summary: 'Update sub-tenant',
    role: 'ledger_partner',
    mutating: { keyPath: '/v1/sub-tenants/{id}' },
    request: { params: subTenantParams, body: SUB_TENANT_PATCH },
    ok: ['200', 'the sub-tenant', SubTenant],
    errors: { '404': 'SUB_TENANT_NOT_FOUND' },
    description:
      'Suspending it makes its keys answer 403 TENANT_SUSPENDED; reactivating restores access on the next request. kind is immutable (422 IMMUTABLE_FIELD).',
  }),
};

/**
 * A sub-tenant's partner may not make sub-tenants (INVALID_TENANT), which it is told before any
 * field of its body is judged; a body that is no object at all is INVALID_REQUEST first.
 */
async function rootPartnerOnly(ctx: Context, next: Next): Promise<void> {
  const body: unknown = ctx.request.body;
  if (typeof body === 'object' && body !== null && !Array.isArray(body))
    assertRootPartner(principalOf(ctx));
  await next();
}

export function mountSubTenantRoutes(router: Router, deps: LedgerRouteDeps): void {
  const { pool } = deps;
  const ops = SUB_TENANT_OPERATIONS;
  mountOperation(
    router,
    deps,
    ops.createSubTenant,
    async (ctx) => {
      ctx.status = 201;
      ctx.body = await createSubTenant(pool, principalOf(ctx), validated(ctx, 'body'));
    },
    { after: [rootPartnerOnly] },
  );
  mountOperation(router, deps, ops.listSubTenants, async (ctx) => {
    ctx.body = await getSubTenants(pool, principalOf(ctx), validated<Page>(ctx, 'query'));
  });
  mountOperation(router, deps, ops.patchSubTenant, async (ctx) => {
    ctx.body = await patchSubTenant(
      pool,
      principalOf(ctx),
      paramOf(ctx, 'sub_tenant_id'),
      validated(ctx, 'body'),
    );
  });
}
