import type Router from '@koa/router';
import Joi from 'joi';
import {
  changeTenant,
  createTenant,
  getTenant,
  listAllTenants,
  rerunBootstrap,
} from '../../../services/quota/tenants';
import { tenantOf } from '../../../services/quota/keys';
import { TenantCreated, TenantOut } from '../models';
import { actor, body, id, name } from '../../../services/quota/schemas';
import {
  mountOperation,
  operation,
  principalOf,
  validated,
  type QuotaRouteDeps,
} from './operation';

const tenantParams = Joi.object({ tenant_id: id().required() });

export const TENANT_OPERATIONS = {
  list: operation({
    method: 'get',
    path: '/v1/tenants',
    operationId: 'listTenants',
    summary: 'Every tenant, oldest first (operator)',
    tags: ['tenants'],
    access: 'tenants:admin',
    responses: { '200': { description: 'tenants', schema: Joi.array().items(TenantOut) } },
  }),
  create: operation({
    method: 'post',
    path: '/v1/tenants',
    operationId: 'createTenant',
    summary: 'Create a tenant and its first key (operator)',
    description:
      "The first key holds every tenant scope and is shown once. Its grants are written by the workflow quota-bootstrap/<tenant id>: until it is done the key is answered 503 tenant_bootstrap_pending (Retry-After: 1); the tenant's `bootstrap.state` shows its progress.",
    tags: ['tenants'],
    access: 'tenants:admin',
    request: {
      body: body({
        name: name().required(),
        admin_actor: actor().description("the first key's actor; default: the operator key's"),
      }).id('TenantCreate'),
    },
    responses: { '201': { description: 'created', schema: TenantCreated } },
  }),
  get: operation({
    method: 'get',
    path: '/v1/tenants/{tenant_id}',
    operationId: 'getTenant',
    summary: 'A tenant (operator)',
    tags: ['tenants'],
    access: 'tenants:admin',
    request: { params: tenantParams },
    responses: {
      '200': { description: 'the tenant', schema: TenantOut },
    },
    refusals: { 404: ['tenant_not_found'] },
  }),
  patch: operation({
    method: 'patch',
    path: '/v1/tenants/{tenant_id}',
    operationId: 'patchTenant',
    summary: 'Rename, suspend or reactivate a tenant (operator)',
    tags: ['tenants'],
    access: 'tenants:admin',
    request: {
      params: tenantParams,
      body: body({
        name: name(),
        status: Joi.string().valid('active', 'suspended'),
      })
        .min(1)
        .id('TenantPatch'),
    },
    responses: {
      '200': { description: 'the tenant', schema: TenantOut },
    },
    refusals: { 404: ['tenant_not_found'] },
  }),
  suspend: operation({
    method: 'delete',
    path: '/v1/tenants/{tenant_id}',
    operationId: 'suspendTenant',
    summary: 'Suspend a tenant (operator; soft: its data and history stay)',
    description:
      'Its keys are refused 403 tenant_suspended from their next request; PATCH `status: active` reactivates it. Suspending a suspended tenant answers it as it is.',
    tags: ['tenants'],
    access: 'tenants:admin',
    request: { params: tenantParams },
    responses: {
      '200': { description: 'the suspended tenant', schema: TenantOut },
    },
    refusals: { 404: ['tenant_not_found'] },
  }),
  bootstrap: operation({
    method: 'post',
    path: '/v1/tenants/{tenant_id}/bootstrap-authz',
    operationId: 'bootstrapTenantAuthz',
    summary: "Run a tenant's access-control bootstrap again (operator)",
    description:
      "Resumable and idempotent: the workflow quota-bootstrap/<tenant id> writes every grant the tenant's active keys need, leaving those already there. The answer shows `bootstrap.state: pending`; GET the tenant to follow it.",
    tags: ['tenants'],
    access: 'tenants:admin',
    request: { params: tenantParams },
    responses: {
      '200': { description: 'the tenant', schema: TenantOut },
    },
    refusals: { 404: ['tenant_not_found'] },
  }),
  own: operation({
    method: 'get',
    path: '/v1/tenant',
    operationId: 'getOwnTenant',
    summary: "The caller's own tenant (any tenant key)",
    tags: ['tenants'],
    access: 'tenant',
    responses: { '200': { description: 'the tenant', schema: TenantOut } },
  }),
} as const;

type TenantId = { tenant_id: string };

export function mountTenantRoutes(router: Router, deps: QuotaRouteDeps): void {
  const ops = TENANT_OPERATIONS;
  mountOperation(router, deps, ops.list, async (ctx) => {
    ctx.body = await listAllTenants(deps);
  });
  mountOperation(router, deps, ops.create, async (ctx) => {
    ctx.status = 201;
    ctx.body = await createTenant(deps, principalOf(ctx), validated(ctx, 'body'));
  });
  mountOperation(router, deps, ops.get, async (ctx) => {
    ctx.body = await getTenant(deps, validated<TenantId>(ctx, 'params').tenant_id);
  });
  mountOperation(router, deps, ops.patch, async (ctx) => {
    const { tenant_id } = validated<TenantId>(ctx, 'params');
    ctx.body = await changeTenant(deps, principalOf(ctx), tenant_id, validated(ctx, 'body'));
  });
  mountOperation(router, deps, ops.suspend, async (ctx) => {
    const { tenant_id } = validated<TenantId>(ctx, 'params');
    ctx.body = await changeTenant(deps, principalOf(ctx), tenant_id, { status: 'suspended' });
  });
  mountOperation(router, deps, ops.bootstrap, async (ctx) => {
    const { tenant_id } = validated<TenantId>(ctx, 'params');
    ctx.body = await rerunBootstrap(deps, principalOf(ctx), tenant_id);
  });
  mountOperation(router, deps, ops.own, async (ctx) => {
    ctx.body = await getTenant(deps, tenantOf(principalOf(ctx)));
  });
}
