import type Router from '@koa/router';
import Joi from 'joi';
import { AuditPage, LedgerPage, SummaryRow } from '../models';
import {
  readAudit,
  readLedger,
  SUMMARY_ROWS_MAX,
  summarizeUsage,
} from '../../../services/quota/reporting';
import {
  actor,
  cursor,
  instant,
  LIMITS,
  listLimit,
  subject,
} from '../../../services/quota/schemas';
import { boundedText } from '../../../platform/text';
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
  ledger: operation({
    method: 'get',
    path: '/v1/ledger',
    operationId: 'readLedger',
    summary: 'The consumption ledger, oldest first',
    description:
      "One entry per resource per event, signed (consume +, refund -); its event_id is the answer's. A key with subject_prefix reads its subjects only (another subject filter is 403). `from` inclusive, `to` exclusive; pages: pass next_cursor as cursor.",
    tags: ['reporting'],
    access: 'usage:read',
    request: {
      query: Joi.object({
        subject: subject(),
        resource: boundedText(LIMITS.resourceChars, { min: 1 }),
        from: instant(),
        to: instant(),
        cursor: cursor(),
        limit: listLimit(),
      }),
    },
    responses: { '200': { description: 'a page', schema: LedgerPage } },
    refusals: { 403: ['constraint_violation'] },
  }),
  summary: operation({
    method: 'get',
    path: '/v1/usage/summary',
    operationId: 'usageSummary',
    summary: 'Net usage per UTC hour or day, subject and resource',
    description: `From the ledger: consumed, refunded and net per period. \`to\` defaults to now, \`from\` to 30 days before \`to\`; at most ${SUMMARY_ROWS_MAX} rows, the oldest first (narrow the range for more). A key with subject_prefix sees its subjects only.`,
    tags: ['reporting'],
    access: 'usage:read',
    request: {
      query: Joi.object({
        granularity: Joi.string().valid('hour', 'day').default('day'),
        resource: boundedText(LIMITS.resourceChars, { min: 1 }),
        subject: subject(),
        from: instant(),
        to: instant(),
      }),
    },
    responses: { '200': { description: 'rows', schema: Joi.array().items(SummaryRow) } },
    refusals: { 403: ['constraint_violation'] },
  }),
} as const;

export function mountReportingRoutes(router: Router, deps: QuotaRouteDeps): void {
  mountOperation(router, deps, REPORTING_OPERATIONS.audit, async (ctx) => {
    ctx.body = await readAudit(deps, principalOf(ctx), validated(ctx, 'query'));
  });
  mountOperation(router, deps, REPORTING_OPERATIONS.ledger, async (ctx) => {
    ctx.body = await readLedger(deps, principalOf(ctx), validated(ctx, 'query'));
  });
  mountOperation(router, deps, REPORTING_OPERATIONS.summary, async (ctx) => {
    ctx.body = await summarizeUsage(deps, principalOf(ctx), validated(ctx, 'query'));
  });
}
