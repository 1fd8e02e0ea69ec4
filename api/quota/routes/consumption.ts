import type Router from '@koa/router';
import Joi from 'joi';
import { check, consume, refund } from '../../../services/quota/consumption/consume';
import type { ConsumeBody } from '../../../services/quota/consumption/request';
import {
  CheckResponse,
  CommitResponse,
  ConsumeResponse,
  RefundResponse,
  ReleaseResponse,
  ReservationOut,
  ReserveResponse,
} from '../models';
import {
  commit,
  getReservation,
  release,
  reserve,
  type CommitBody,
  type ReserveBody,
} from '../../../services/quota/consumption/reservations';
import { body, id, idempotencyKey, LIMITS, subject } from '../../../services/quota/schemas';
import { boundedText } from '../../../platform/text';
import {
  callerOf,
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

/** The fields of a request that spends (consume, refund, reserve). */
const spending = () => ({
  subject: subject().required(),
  items: items(),
  idempotency_key: idempotencyKey(),
  metadata: metadata(),
});

const DECIDED_TOGETHER =
  "Every item and every policy that governs it (the subject's plan, with its overrides) are decided together: all admitted or nothing consumed. Items naming one resource are summed. A resource the tenant does not have is 422 reference_not_found; a subject outside the key's subject_prefix 403. A subject without a plan is governed by nothing: allowed, with no results. Fast policies are decided on the subject's state in Redis by one atomic script (read, decided with the same exact arithmetic, written); strict policies on Postgres rows locked for the decision (concurrent strict requests are decided together in one statement, each seeing the ones before it): neither mode over-admits. A request governed by fast policies only opens no Postgres transaction: its ledger entries go to a Redis stream in the same atomic step (write-ahead, before the answer) and the ledger-flush job moves them into the ledger within seconds (strict_deferred: true; /healthz/worker watches the wait). When Redis does not answer, each fast policy follows its on_backend_error (null: allow), the answer says degraded: true, and the ledger entries are written in Postgres. 503 decision_contended (with Retry-After) when the request could not be decided after the catalogue it was judged by kept changing, or its state kept moving.";
const IDEMPOTENT =
  'With idempotency_key, a retry with the same body answers the first decision and its event_id and consumes nothing more (for 24 hours); a concurrent duplicate waits for the first; another body under the key is 409 idempotency_key_reused.';

export const CONSUMPTION_OPERATIONS = {
  consume: operation({
    method: 'post',
    path: '/v1/consume',
    operationId: 'consume',
    decides: true,
    summary: "Spend amounts against a subject's policies",
    description: `${DECIDED_TOGETHER} ${IDEMPOTENT} A denial is a 200 with allowed: false (and retry_after_seconds per policy).`,
    tags: ['consumption'],
    access: 'consume',
    request: { body: body(spending()).id('ConsumeRequest'), bodyCheckedByJsonSchema: true },
    responses: { '200': { description: 'the decision', schema: ConsumeResponse } },
    refusals: {
      403: ['constraint_violation'],
      409: ['idempotency_key_reused'],
      503: ['decision_contended'],
    },
  }),
  check: operation({
    method: 'post',
    path: '/v1/check',
    operationId: 'check',
    decides: true,
    summary: 'What consume would answer, consuming nothing',
    description: `${DECIDED_TOGETHER} blocking is the first policy that denies.`,
    tags: ['consumption'],
    access: 'check',
    request: {
      body: body({ subject: subject().required(), items: items() }).id('CheckRequest'),
      bodyCheckedByJsonSchema: true,
    },
    responses: { '200': { description: 'the decision', schema: CheckResponse } },
    refusals: { 403: ['constraint_violation'], 503: ['decision_contended'] },
  }),
  refund: operation({
    method: 'post',
    path: '/v1/refund',
    operationId: 'refund',
    decides: true,
    summary: "Give amounts back to the current windows of the subject's quota policies",
    description: `Never below zero; a rate limit's bucket is not refilled (the requests it paced happened). Ledger entries of type refund with negative amounts. ${IDEMPOTENT}`,
    tags: ['consumption'],
    access: 'consume',
    request: { body: body(spending()).id('RefundRequest'), bodyCheckedByJsonSchema: true },
    responses: { '200': { description: 'refunded', schema: RefundResponse } },
    refusals: {
      403: ['constraint_violation'],
      409: ['idempotency_key_reused'],
      503: ['decision_contended'],
    },
  }),
  reserve: operation({
    method: 'post',
    path: '/v1/reserve',
    operationId: 'reserve',
    decides: true,
    summary: 'Hold amounts until commit, release or expiry',
    description: `Decided as consume is (all or nothing): 201 with the reservation when held, 200 with allowed: false and no reservation when not. The hold counts in the window it was made in; rate limits are paced now and their tokens are not given back. ttl_seconds 1..86400 (default 300): past it, commit and release answer 409 reservation_expired and the hold is released (by them, or within a minute by the reservation-expiry job on its Temporal schedule; a workflow per reservation was not chosen: the dev server starts ~110 workflows/s, below the reserve rate the service aims for). ${IDEMPOTENT}`,
    tags: ['reservations'],
    access: 'consume',
    request: {
      body: body({
        ...spending(),
        ttl_seconds: Joi.number().integer().min(1).max(86_400).default(300),
      }).id('ReserveRequest'),
    },
    responses: {
      '201': { description: 'held', schema: ReserveResponse },
      '200': { description: 'denied: nothing held', schema: ReserveResponse },
    },
    refusals: {
      403: ['constraint_violation'],
      409: ['idempotency_key_reused'],
      503: ['decision_contended'],
    },
  }),
  getReservation: operation({
    method: 'get',
    path: '/v1/reservations/{reservation_id}',
    operationId: 'getReservation',
    summary: 'A reservation: held, committed, released or expired',
    tags: ['reservations'],
    access: 'consume',
    request: { params: Joi.object({ reservation_id: id().required() }) },
    responses: { '200': { description: 'the reservation', schema: ReservationOut } },
    refusals: { 404: ['reservation_not_found'] },
  }),
  commit: operation({
    method: 'post',
    path: '/v1/reservations/{reservation_id}/commit',
    operationId: 'commitReservation',
    summary: 'Settle a reservation with what was actually used',
    description: `Each resource's usage moves by actual - held (an actual not given is what was held; 0 gives all back); a commit is never refused for exceeding a limit (the work is done): overage says how far past one it went. A resource not reserved is 422 not_reserved. ${IDEMPOTENT}`,
    tags: ['reservations'],
    access: 'consume',
    request: {
      params: Joi.object({ reservation_id: id().required() }),
      body: body({
        actuals: Joi.array()
          .items(item(0).id('ActualItem'))
          .max(LIMITS.itemsMax)
          .unique('resource')
          .default([]),
        idempotency_key: idempotencyKey(),
      }).id('CommitRequest'),
    },
    responses: { '200': { description: 'committed', schema: CommitResponse } },
    refusals: {
      403: ['constraint_violation'],
      404: ['reservation_not_found'],
      409: ['reservation_expired', 'reservation_settled', 'idempotency_key_reused'],
      503: ['decision_contended'],
    },
  }),
  release: operation({
    method: 'post',
    path: '/v1/reservations/{reservation_id}/release',
    operationId: 'releaseReservation',
    summary: "Give a reservation's hold back",
    description: 'Releasing a released reservation answers it as it is (no key needed).',
    tags: ['reservations'],
    access: 'consume',
    request: {
      params: Joi.object({ reservation_id: id().required() }),
      body: body({}).id('ReleaseRequest'),
    },
    responses: { '200': { description: 'released', schema: ReleaseResponse } },
    refusals: {
      403: ['constraint_violation'],
      404: ['reservation_not_found'],
      409: ['reservation_expired', 'reservation_settled'],
      503: ['decision_contended'],
    },
  }),
} as const;

export function mountConsumptionRoutes(router: Router, deps: QuotaRouteDeps): void {
  const ops = CONSUMPTION_OPERATIONS;
  mountOperation(router, deps, ops.consume, async (ctx) => {
    ctx.body = await consume(deps, callerOf(ctx), validated<ConsumeBody>(ctx, 'body'));
  });
  mountOperation(router, deps, ops.check, async (ctx) => {
    ctx.body = await check(deps, callerOf(ctx), validated<ConsumeBody>(ctx, 'body'));
  });
  mountOperation(router, deps, ops.refund, async (ctx) => {
    ctx.body = await refund(deps, callerOf(ctx), validated<ConsumeBody>(ctx, 'body'));
  });
  const reservationOf = (ctx: Parameters<Parameters<typeof mountOperation>[3]>[0]) =>
    validated<{ reservation_id: string }>(ctx, 'params').reservation_id;
  mountOperation(router, deps, ops.reserve, async (ctx) => {
    const answer = await reserve(deps, callerOf(ctx), validated<ReserveBody>(ctx, 'body'));
    ctx.status = answer.allowed ? 201 : 200;
    ctx.body = answer;
  });
  mountOperation(router, deps, ops.getReservation, async (ctx) => {
    ctx.body = await getReservation(deps, principalOf(ctx), reservationOf(ctx));
  });
  mountOperation(router, deps, ops.commit, async (ctx) => {
    ctx.body = await commit(
      deps,
      principalOf(ctx),
      reservationOf(ctx),
      validated<CommitBody>(ctx, 'body'),
    );
  });
  mountOperation(router, deps, ops.release, async (ctx) => {
    ctx.body = await release(deps, principalOf(ctx), reservationOf(ctx));
  });
}
