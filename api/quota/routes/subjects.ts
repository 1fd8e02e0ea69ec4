import type Router from '@koa/router';
import Joi from 'joi';
import { AssignmentOut, EntitlementsOut, OverrideOut, SubjectUsageOut } from '../models';
import { subjectEntitlements, subjectUsage } from '../../../services/quota/consumption/usage';
import {
  assignPlan,
  getAssignment,
  getOverrides,
  putOverrides,
  unassign,
  type OverrideItem,
} from '../../../services/quota/subjects';
import { body, id, subject, LIMITS } from '../../../services/quota/schemas';
import {
  mountOperation,
  operation,
  principalOf,
  validated,
  type QuotaRouteDeps,
} from './operation';

/** The subject in the path: 1 to 256 characters, no control characters, no braces (percent-encode a `/`). */
export const subjectParams = Joi.object({ subject: subject().required() });
const SUBJECT_RULES = "A subject outside the key's subject_prefix is 403 constraint_violation.";

export const SUBJECT_OPERATIONS = {
  putAssignment: operation({
    method: 'put',
    path: '/v1/subjects/{subject}/assignment',
    operationId: 'putAssignment',
    summary: 'Assign a plan to a subject (replacing its plan)',
    description: `${SUBJECT_RULES} A plan outside the key's plan_ids is 403 constraint_violation; plan_id must name a plan of the tenant (422 reference_not_found).`,
    tags: ['subjects'],
    access: 'assignments:write',
    request: {
      params: subjectParams,
      body: body({ plan_id: id().required() }).id('AssignmentPut'),
    },
    responses: { '200': { description: 'the assignment', schema: AssignmentOut } },
    refusals: { 403: ['constraint_violation'] },
  }),
  getAssignment: operation({
    method: 'get',
    path: '/v1/subjects/{subject}/assignment',
    operationId: 'getAssignment',
    summary: "A subject's plan",
    description: SUBJECT_RULES,
    tags: ['subjects'],
    access: 'assignments:read',
    request: { params: subjectParams },
    responses: { '200': { description: 'the assignment', schema: AssignmentOut } },
    refusals: { 403: ['constraint_violation'], 404: ['assignment_not_found'] },
  }),
  deleteAssignment: operation({
    method: 'delete',
    path: '/v1/subjects/{subject}/assignment',
    operationId: 'deleteAssignment',
    summary: "Remove a subject's plan (its overrides stay)",
    description: `${SUBJECT_RULES} A subject without a plan is governed by no policy: consume answers it allowed with no results.`,
    tags: ['subjects'],
    access: 'assignments:write',
    request: { params: subjectParams },
    responses: { '204': { description: 'removed' } },
    refusals: { 403: ['constraint_violation'], 404: ['assignment_not_found'] },
  }),
  putOverrides: operation({
    method: 'put',
    path: '/v1/subjects/{subject}/overrides',
    operationId: 'putOverrides',
    summary: "Replace a subject's per-policy overrides",
    description: `${SUBJECT_RULES} An override's limit_amount replaces the policy's limit (a quota's limit_amount, a rate limit's bucket_capacity) for this subject; null keeps the policy's; enabled: false exempts the subject from the policy. Each policy at most once; policy_id must name a policy of the tenant (422 reference_not_found).`,
    tags: ['subjects'],
    access: 'assignments:write',
    request: {
      params: subjectParams,
      body: body({
        overrides: Joi.array()
          .items(
            Joi.object({
              policy_id: id().required(),
              limit_amount: Joi.number()
                .integer()
                .min(1)
                .max(LIMITS.amountMax)
                .allow(null)
                .default(null),
              enabled: Joi.boolean().default(true),
            }).id('OverrideItem'),
          )
          .max(100)
          .unique('policy_id')
          .required(),
      }).id('OverridesPut'),
    },
    responses: { '200': { description: 'the overrides', schema: Joi.array().items(OverrideOut) } },
    refusals: { 403: ['constraint_violation'] },
  }),
  getOverrides: operation({
    method: 'get',
    path: '/v1/subjects/{subject}/overrides',
    operationId: 'getOverrides',
    summary: "A subject's overrides",
    description: SUBJECT_RULES,
    tags: ['subjects'],
    access: 'assignments:read',
    request: { params: subjectParams },
    responses: { '200': { description: 'the overrides', schema: Joi.array().items(OverrideOut) } },
    refusals: { 403: ['constraint_violation'] },
  }),
  usage: operation({
    method: 'get',
    path: '/v1/subjects/{subject}/usage',
    operationId: 'getSubjectUsage',
    summary: "A subject's usage in each governing policy's current window",
    description: `${SUBJECT_RULES} Read as it is, consuming and locking nothing; a rate limit's used is the tokens spent (capacity - remaining).`,
    tags: ['subjects'],
    access: 'usage:read',
    request: { params: subjectParams },
    responses: { '200': { description: 'usage', schema: SubjectUsageOut } },
    refusals: { 403: ['constraint_violation'] },
  }),
  entitlements: operation({
    method: 'get',
    path: '/v1/subjects/{subject}/entitlements',
    operationId: 'getSubjectEntitlements',
    summary: 'The policies that govern a subject, with its overrides applied',
    description: `${SUBJECT_RULES} source is override when the subject has one for the policy; a policy it disabled is not listed.`,
    tags: ['subjects'],
    access: 'usage:read',
    request: { params: subjectParams },
    responses: { '200': { description: 'entitlements', schema: EntitlementsOut } },
    refusals: { 403: ['constraint_violation'] },
  }),
} as const;

type SubjectParam = { subject: string };

export function mountSubjectRoutes(router: Router, deps: QuotaRouteDeps): void {
  const ops = SUBJECT_OPERATIONS;
  const subjectOf = (ctx: Parameters<Parameters<typeof mountOperation>[3]>[0]) =>
    validated<SubjectParam>(ctx, 'params').subject;
  mountOperation(router, deps, ops.putAssignment, async (ctx) => {
    const { plan_id } = validated<{ plan_id: string }>(ctx, 'body');
    ctx.body = await assignPlan(deps, principalOf(ctx), subjectOf(ctx), plan_id);
  });
  mountOperation(router, deps, ops.getAssignment, async (ctx) => {
    ctx.body = await getAssignment(deps, principalOf(ctx), subjectOf(ctx));
  });
  mountOperation(router, deps, ops.deleteAssignment, async (ctx) => {
    await unassign(deps, principalOf(ctx), subjectOf(ctx));
    ctx.status = 204;
  });
  mountOperation(router, deps, ops.putOverrides, async (ctx) => {
    const { overrides } = validated<{ overrides: OverrideItem[] }>(ctx, 'body');
    ctx.body = await putOverrides(deps, principalOf(ctx), subjectOf(ctx), overrides);
  });
  mountOperation(router, deps, ops.getOverrides, async (ctx) => {
    ctx.body = await getOverrides(deps, principalOf(ctx), subjectOf(ctx));
  });
  mountOperation(router, deps, ops.usage, async (ctx) => {
    ctx.body = await subjectUsage(deps, principalOf(ctx), subjectOf(ctx));
  });
  mountOperation(router, deps, ops.entitlements, async (ctx) => {
    ctx.body = await subjectEntitlements(deps, principalOf(ctx), subjectOf(ctx));
  });
}
