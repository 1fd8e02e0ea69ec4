import type Router from '@koa/router';
import Joi from 'joi';
import { AuditPage } from '../models';
import { readAudit } from '../reporting';
import { actor, cursor, instant, listLimit } from '../schemas';
import {
  mountOperation,
  operation,
  principalOf,
  validated,
  type QuotaRouteDeps,
} from './operation';

export const REPORTING_OPERATIONS = {
  audit: operation({
    method: 'get',
    path: '/v1/audit',
    operationId: 'readAudit',
    summary: "The tenant's admin audit, oldest first (read-only: there is no write route)",
    description:
      'Every admin change (tenant, keys, catalogue, assignments, overrides) with its actor, before and after. `from` inclusive, `to` exclusive. Pages: pass next_cursor as cursor; null at the end.',
    tags: ['reporting'],
    access: 'audit:read',
    request: {
      query: Joi.object({
        actor: actor(),
        action: Joi.string().max(100),
        from: instant(),
        to: instant(),
        cursor: cursor(),
        limit: listLimit(),
      }),
    },
    responses: { '200': { description: 'a page', schema: AuditPage } },
  }),
} as const;

export function mountReportingRoutes(router: Router, deps: QuotaRouteDeps): void {
  mountOperation(router, deps, REPORTING_OPERATIONS.audit, async (ctx) => {
    ctx.body = await readAudit(deps, principalOf(ctx), validated(ctx, 'query'));
  });
}
