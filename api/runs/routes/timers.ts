import type Router from '@koa/router';
import type { Context } from 'koa';
import type { PlatformDeps } from '../../../platform/deps';
import type { TimerState } from '../../../db/runs/timers';
import { principalOf } from '../auth';
import {
  createTimer,
  deleteTimer,
  getTimer,
  listTenantTimers,
  type TimerCreateBody,
} from '../../../services/runs/timers/timers';
import { labelPairsOf, mountOperation, validated, type Starters } from './operation';
import Joi from 'joi';
import { TIMER_STATES } from '../../../db/runs/timers';
import { isUtcInstant, parseInstantWithOffset } from '../../../platform/instant';
import { runsError } from '../../../services/runs/errors';
import {
  offset,
  pageLimit,
  stateFilter,
  ulidParam,
  utcInstant,
} from '../../../services/runs/schemas';
import { areaOperations, done, ok, type RunsOperation } from './operation';
import { labelFilter, labelMap, opaquePayload } from '../../../services/runs/payloads';
import { InlineWebhook } from '../../../services/runs/webhooks/inline';
import { Timer, TimerList } from '../../../services/runs/timers/models';

/** How far ahead fire_at may be: ten years of days, leap days included. */
export const TIMER_HORIZON_DAYS = 3653;
const DAY_MS = 86_400_000;
export const TIMERS_LIST_LIMIT_DEFAULT = 100;
export const TIMERS_LIST_LIMIT_MAX = 1000;
const fireAt = () =>
  utcInstant()
    .custom((value: string, helpers) => {
      if (!isUtcInstant(value)) return value; // utcInstant's own message says why
      // null: before year 0001, which Postgres does not hold.
      const ms = parseInstantWithOffset(value);
      if (ms === null)
        return helpers.message({ custom: '{{#label}} must be in year 0001 or later' });
      if (ms - Date.now() > TIMER_HORIZON_DAYS * DAY_MS)
        return helpers.message({
          custom: `{{#label}} must be at most ${TIMER_HORIZON_DAYS} days (ten years) ahead`,
        });
      return value;
    })
    .description(
      `ISO-8601 UTC instant with the Z suffix, kept to the millisecond; from year 0001 to at most ${TIMER_HORIZON_DAYS} days (ten years) ahead (422). A past instant fires at once (its fire_delay_seconds counts from fire_at).`,
    );

const TimerCreateRequest = Joi.object({
  fire_at: fireAt().required(),
  payload: opaquePayload('timer.fired').default(null),
  labels: labelMap('timer.fired').default({}),
  // Only the timer's own timer.fired reaches it: its events must name timer.fired (operation text).
  webhook: InlineWebhook,
})
  .required()
  .unknown(false)
  .id('TimerCreateRequest');

const timersQuery = Joi.object({
  state_filter: stateFilter(TIMER_STATES),
  label_filter: labelFilter('timers'),
  limit: pageLimit(TIMERS_LIST_LIMIT_MAX, TIMERS_LIST_LIMIT_DEFAULT),
  offset: offset().default(0),
});

const timerParams = Joi.object({ timer_id: ulidParam(() => runsError('timer_not_found')) });

/** What each refusal means for a timer operation. */
const TIMER_REFUSALS = {
  '400': 'Malformed JSON, or an unknown query parameter (the detail names the supported set).',
  '403':
    "`permission_denied`: the key lacks the operation's svc_timer_* permission (run, workflow and webhook permissions grant no timer route).",
  '429': '`rate_limited` (with `Retry-After`).',
  '503': 'A backend is briefly unreachable (Postgres or Redis restarting); with Retry-After.',
} as const;
const TIMER_NOT_FOUND =
  "`timer_not_found`: no such timer, or not this tenant's (whatever the id's shape).";

const timerOperation = areaOperations(TIMER_REFUSALS);
const write = timerOperation('svc_timer_write');
const read = timerOperation('svc_timer_read');

/** The timer operations of the runs service (the spec's Timers table, and a read by id). */
export const TIMER_OPERATIONS = {
  timerCreate: write({
    method: 'post',
    path: '/api/v1/timers',
    operationId: 'createTimer',
    routeName: 'timer.create',
    summary: 'Create a timer: timer.fired is delivered at fire_at',
    description:
      "One Temporal workflow timer/<timer_id> sleeps until fire_at, then marks the timer fired and publishes timer.fired (data: timer_id, fire_at, fired_at, fire_delay_seconds, labels, payload) to the tenant's endpoints that name it and to the timer's inline webhook. Runs no container. Counted against max_pending_timers while pending. An inline `webhook` ({url, events, secret?}, a run's rules) receives only this timer's timer.fired, so its events must name timer.fired.",
    request: { body: TimerCreateRequest },
    responses: { '201': ok(Timer, 'Created') },
    refusals: {
      '400': 'Malformed JSON; for an inline webhook `invalid_webhook_url` or `unknown_event_type`.',
      '422':
        'Schema mismatch (joi message): an unknown field, fire_at not a UTC instant with Z or over ten years ahead, a label out of its bounds, U+0000 in the payload; or `payload_too_large` (over 65536 bytes as JSON).',
      '429':
        '`timer_quota_exceeded` (the tenant has max_pending_timers pending timers), or `rate_limited` (with `Retry-After`).',
    },
  }),
  timerList: read({
    method: 'get',
    path: '/api/v1/timers',
    operationId: 'listTimers',
    routeName: 'timer.list',
    summary: "The tenant's timers, newest first (without their payloads)",
    request: { query: timersQuery },
    responses: { '200': ok(TimerList) },
  }),
  timerGet: read({
    method: 'get',
    path: '/api/v1/timers/{timer_id}',
    operationId: 'getTimer',
    routeName: 'timer.get',
    summary: 'A timer with its payload',
    request: { params: timerParams },
    responses: { '200': ok(Timer) },
    refusals: { '404': TIMER_NOT_FOUND },
  }),
  timerDelete: write({
    method: 'delete',
    path: '/api/v1/timers/{timer_id}',
    operationId: 'deleteTimer',
    routeName: 'timer.delete',
    summary: 'Cancel a pending timer',
    description:
      'A pending timer becomes cancelled (kept, readable; it frees its max_pending_timers slot) and its workflow is cancelled, best effort: one conditional UPDATE decides, so a timer that fires meanwhile is 409 and a cancelled one never fires. A cancelled timer answers 204 again (nothing changes).',
    request: { params: timerParams },
    responses: { '204': done('Cancelled') },
    refusals: {
      '404': TIMER_NOT_FOUND,
      '409': '`timer_already_fired`: the timer has fired.',
    },
  }),
} satisfies Record<string, RunsOperation>;

/** The timer routes (timers/): create, list, read, cancel. */
export function mountTimerRoutes(router: Router, deps: PlatformDeps, starters: Starters): void {
  const ops = TIMER_OPERATIONS;
  const starter = starters.timers;
  const timerIdOf = (ctx: Context) => validated<{ timer_id: string }>(ctx, 'params').timer_id;
  mountOperation(router, ops.timerCreate, async (ctx) => {
    const body = validated<TimerCreateBody>(ctx, 'body');
    ctx.status = 201;
    ctx.body = await createTimer(deps, starter, principalOf(ctx), body);
  });
  mountOperation(router, ops.timerList, async (ctx) => {
    const q = validated<{
      state_filter?: string;
      label_filter?: string[];
      limit: number;
      offset: number;
    }>(ctx, 'query');
    ctx.body = await listTenantTimers(deps, principalOf(ctx).tenantId, {
      states: q.state_filter ? (q.state_filter.split(',') as TimerState[]) : null,
      labels: labelPairsOf(q.label_filter),
      limit: q.limit,
      offset: q.offset,
    });
  });
  mountOperation(router, ops.timerGet, async (ctx) => {
    ctx.body = await getTimer(deps, principalOf(ctx).tenantId, timerIdOf(ctx));
  });
  mountOperation(router, ops.timerDelete, async (ctx) => {
    await deleteTimer(deps, principalOf(ctx), timerIdOf(ctx));
    ctx.status = 204;
  });
}
