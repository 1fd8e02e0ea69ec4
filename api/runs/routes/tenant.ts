import type Router from '@koa/router';
import Joi from 'joi';
import { principalOf } from '../auth';
import { AuditList, TenantQuotas, Usage } from '../../../services/runs/models';
import {
  AUDIT_LIMIT_DEFAULT,
  AUDIT_LIMIT_MAX,
  offset,
  pageLimit,
} from '../../../services/runs/schemas';
import {
  getQuotas,
  getUsage,
  listAuditRecords,
  putQuotas,
  QUOTA_BODY,
} from '../../../services/runs/tenant';
import {
  mountOperation,
  ok,
  runsOperation,
  validated,
  type RunsDeps,
  type RunsOperation,
} from './operation';

/** The tenant's own: its quotas, the key's usage, the audit log. */
export const TENANT_OPERATIONS = {
  quotasGet: runsOperation({
    method: 'get',
    path: '/api/v1/tenant/quotas',
    operationId: 'getTenantQuotas',
    routeName: 'tenant.quotas.get',
    permission: 'svc_run_read',
    summary: 'Tenant quotas',
    responses: { '200': ok(TenantQuotas) },
  }),
  quotasPut: runsOperation({
    method: 'put',
    path: '/api/v1/tenant/quotas',
    operationId: 'putTenantQuotas',
    routeName: 'tenant.quotas.update',
    permission: 'svc_tenant_admin',
    summary: 'Update some quotas (partial; at least one field; unknown fields 422)',
    request: { body: QUOTA_BODY },
    responses: { '200': ok(TenantQuotas) },
  }),
  usage: runsOperation({
    method: 'get',
    path: '/api/v1/usage',
    operationId: 'getUsage',
    routeName: 'usage.get',
    permission: 'svc_run_read',
    summary: "The key's tier, limits and usage",
    responses: { '200': ok(Usage) },
  }),
  audit: runsOperation({
    method: 'get',
    path: '/api/v1/audit',
    operationId: 'listAudit',
    routeName: 'audit.list',
    permission: 'svc_run_read',
    summary: 'Operator actions and refusals against the tenant, newest first',
    request: {
      query: Joi.object({
        limit: pageLimit(AUDIT_LIMIT_MAX, AUDIT_LIMIT_DEFAULT),
        offset: offset().default(0),
      }),
    },
    responses: { '200': ok(AuditList) },
  }),
} satisfies Record<string, RunsOperation>;

export function mountTenantRoutes(router: Router, deps: RunsDeps): void {
  const ops = TENANT_OPERATIONS;
  mountOperation(router, ops.quotasGet, async (ctx) => {
    ctx.body = await getQuotas(deps, principalOf(ctx));
  });
  mountOperation(router, ops.quotasPut, async (ctx) => {
    ctx.body = await putQuotas(deps, principalOf(ctx), validated(ctx, 'body'));
  });
  mountOperation(router, ops.usage, async (ctx) => {
    ctx.body = await getUsage(deps, principalOf(ctx));
  });
  mountOperation(router, ops.audit, async (ctx) => {
    ctx.body = await listAuditRecords(deps, principalOf(ctx), validated(ctx, 'query'));
  });
}
