import type Router from '@koa/router';
import Joi from 'joi';
import { check, consume, refund, type ConsumeBody } from '../consumption/consume';
import { CheckResponse, ConsumeResponse, RefundResponse } from '../models';
import { body, idempotencyKey, LIMITS, subject } from '../schemas';
import { boundedText } from '../../platform/http/text';
import {
  mountOperation,
  operation,
  principalOf,
  validated,
  type QuotaRouteDeps,
} from './operation';

const item = (minAmount: number) =>
  Joi.object({
    resource: boundedText(LIMITS.resourceChars, { min: 1 }).required(),
    amount: Joi.number().integer().min(minAmount).max(LIMITS.amountMax).required(),
  });
const items = () =>
  Joi.array().items(item(1).id('ConsumeItem')).min(1).max(LIMITS.itemsMax).required();
/** Free-form context kept on the ledger entries: a JSON object of at most 64 keys. */
const metadata = () => Joi.object().unknown(true).max(64).default({});

const DECIDED_TOGETHER =
  "Every item and every policy that governs it (the subject's plan, with its overrides) are decided together: all admitted or nothing consumed. Items naming one resource are summed. A resource the tenant does not have is 422 reference_not_found; a subject outside the key's subject_prefix 403. A subject without a plan is governed by nothing: allowed, with no results. Strict and fast policies are both decided exactly in Postgres for now (the Redis fast path is the next slice).";
const IDEMPOTENT =
  'With idempotency_key, a retry with the same body answers the first decision and its event_id and consumes nothing more (for 24 hours); a concurrent duplicate waits for the first; another body under the key is 409 idempotency_key_reused.';

export const CONSUMPTION_OPERATIONS = {
  consume: operation({
    method: 'post',
    path: '/v1/consume',
    operationId: 'consume',
    summary: "Spend amounts against a subject's policies",
    description: `${DECIDED_TOGETHER} ${IDEMPOTENT} A denial is a 200 with allowed: false (and retry_after_seconds per policy).`,
    tags: ['consumption'],
    access: 'consume',
    request: {
      body: body({
        subject: subject().required(),
        items: items(),
        idempotency_key: idempotencyKey(),
        metadata: metadata(),
      }).id('ConsumeRequest'),
    },
    responses: { '200': { description: 'the decision', schema: ConsumeResponse } },
    refusals: { 403: ['constraint_violation'], 409: ['idempotency_key_reused'] },
  }),
  check: operation({
    method: 'post',
    path: '/v1/check',
    operationId: 'check',
    summary: 'What consume would answer, consuming nothing',
    description: `${DECIDED_TOGETHER} blocking is the first policy that denies.`,
    tags: ['consumption'],
    access: 'check',
    request: { body: body({ subject: subject().required(), items: items() }).id('CheckRequest') },
    responses: { '200': { description: 'the decision', schema: CheckResponse } },
    refusals: { 403: ['constraint_violation'] },
  }),
  refund: operation({
    method: 'post',
    path: '/v1/refund',
    operationId: 'refund',
    summary: "Give amounts back to the current windows of the subject's quota policies",
    description: `Never below zero; a rate limit's bucket is not refilled (the requests it paced happened). Ledger entries of type refund with negative amounts. ${IDEMPOTENT}`,
    tags: ['consumption'],
    access: 'consume',
    request: {
      body: body({
        subject: subject().required(),
        items: items(),
        idempotency_key: idempotencyKey(),
        metadata: metadata(),
      }).id('RefundRequest'),
    },
    responses: { '200': { description: 'refunded', schema: RefundResponse } },
    refusals: { 403: ['constraint_violation'], 409: ['idempotency_key_reused'] },
  }),
} as const;

export function mountConsumptionRoutes(router: Router, deps: QuotaRouteDeps): void {
  const ops = CONSUMPTION_OPERATIONS;
  mountOperation(router, deps, ops.consume, async (ctx) => {
    ctx.body = await consume(deps, principalOf(ctx), validated<ConsumeBody>(ctx, 'body'));
  });
  mountOperation(router, deps, ops.check, async (ctx) => {
    ctx.body = await check(deps, principalOf(ctx), validated<ConsumeBody>(ctx, 'body'));
  });
  mountOperation(router, deps, ops.refund, async (ctx) => {
    ctx.body = await refund(deps, principalOf(ctx), validated<ConsumeBody>(ctx, 'body'));
  });
}
