import type Router from '@koa/router';
import type { Context } from 'koa';
import type { PlatformDeps } from '../../../platform/deps';
import { TIME_ZONE_MAX_LENGTH } from '../../../platform/time-zone';
import { principalOf } from '../auth';
import {
  createSchedule,
  deleteSchedule,
  getSchedule,
  listFires,
  listTenantSchedules,
  patchSchedule,
  SCHEDULE_CATCHUP_WINDOW,
  type ScheduleCreateBody,
  type SchedulePatchBody,
} from '../../../services/runs/schedules/schedules';
import { labelPairsOf, mountOperation, validated } from './operation';
import Joi from 'joi';
import { runsError } from '../../../services/runs/errors';
import { offset, pageLimit, ulidParam } from '../../../services/runs/schemas';
import { areaOperations, done, ok, type RunsOperation } from './operation';
import { labelFilter, labelMap, opaquePayload } from '../../../services/runs/payloads';
import { InlineWebhook } from '../../../services/runs/webhooks/inline';
import { CRON_MAX_LENGTH } from '../../../services/runs/schedules/cron';
import { Schedule, ScheduleFireList, ScheduleList } from '../../../services/runs/schedules/models';

/** A list asks Temporal for each schedule's next_fire_at: its page is kept small. */
export const SCHEDULES_LIST_LIMIT_DEFAULT = 50;
export const SCHEDULES_LIST_LIMIT_MAX = 100;
export const SCHEDULE_FIRES_LIMIT_DEFAULT = 100;
export const SCHEDULE_FIRES_LIMIT_MAX = 1000;

export const cron = () =>
  Joi.string()
    .max(CRON_MAX_LENGTH)
    .description(
      'Five fields: minute hour day-of-month month day-of-week; each a comma list of *, */step, n, a-b, a-b/step; names JAN-DEC, SUN-SAT. A sixth field, @ macros, CRON_TZ= and ?/L/W/# are 422 invalid_cron.',
    );
/** Its length here; the name itself is judged by the service (platform/time-zone.ts). */
export const timezone = () =>
  Joi.string()
    .max(TIME_ZONE_MAX_LENGTH)
    .description(
      'An IANA time zone name spelled as the tz database spells it, case included (America/New_York, Europe/London, UTC, Etc/UTC), kept as given; else 422 invalid_timezone.',
    );

const ScheduleCreateRequest = Joi.object({
  cron: cron().required(),
  timezone: timezone().required(),
  payload: opaquePayload('schedule.fired').default(null),
  labels: labelMap('schedule.fired').default({}),
  enabled: Joi.boolean().default(true),
  // Only the schedule's own schedule.fired reaches it.
  webhook: InlineWebhook,
})
  .required()
  .unknown(false)
  .id('ScheduleCreateRequest');

const SchedulePatchRequest = Joi.object({
  cron: cron(),
  timezone: timezone(),
  payload: opaquePayload('schedule.fired'),
  labels: labelMap('schedule.fired'),
  enabled: Joi.boolean(),
})
  .min(1)
  .required()
  .unknown(false)
  .id('SchedulePatchRequest');

const schedulesQuery = Joi.object({
  label_filter: labelFilter('schedules'),
  limit: pageLimit(SCHEDULES_LIST_LIMIT_MAX, SCHEDULES_LIST_LIMIT_DEFAULT),
  offset: offset().default(0),
});

const firesQuery = Joi.object({
  limit: pageLimit(SCHEDULE_FIRES_LIMIT_MAX, SCHEDULE_FIRES_LIMIT_DEFAULT),
  offset: offset().default(0),
});

const scheduleParams = Joi.object({
  schedule_id: ulidParam(() => runsError('schedule_not_found')),
});

const SCHEDULE_REFUSALS = {
  '400': 'Malformed JSON, or an unknown query parameter (the detail names the supported set).',
  '403':
    "`permission_denied`: the key lacks the operation's svc_timer_* permission (schedules share the timer permissions).",
  '429': '`rate_limited` (with `Retry-After`).',
  '503':
    'A backend is briefly unreachable (Postgres, Redis, or Temporal: `schedule_unavailable`); with Retry-After.',
} as const;
const SCHEDULE_NOT_FOUND =
  "`schedule_not_found`: no such schedule, or not this tenant's (whatever the id's shape).";
const INVALID =
  'Schema mismatch (joi message): an unknown field, a label out of its bounds; or `invalid_cron: <why>` (not a five-field cron of the documented grammar), `invalid_timezone` (not an IANA zone), `payload_too_large` (over 65536 bytes as JSON).';

const scheduleOperation = areaOperations(SCHEDULE_REFUSALS);
const write = scheduleOperation('svc_timer_write');
const read = scheduleOperation('svc_timer_read');

/** The schedule operations of the runs service (the spec's Schedules rows, and a read by id). */
export const SCHEDULE_OPERATIONS = {
  scheduleCreate: write({
    method: 'post',
    path: '/api/v1/schedules',
    operationId: 'createSchedule',
    routeName: 'schedule.create',
    summary: 'Create a schedule: schedule.fired at each cron occurrence in its time zone',
    description: `One Temporal Schedule schedule/<schedule_id> (overlap ALLOW_ALL, catch-up window ${SCHEDULE_CATCHUP_WINDOW}, paused while disabled) starts scheduleFireWorkflow at each occurrence, which records the occurrence in the fire ledger and publishes schedule.fired (data: schedule_id, occurrence, fired_at, fire_delay_seconds, labels, payload) to the tenant's endpoints that name it and to the schedule's inline webhook. Runs no container. Counted against max_schedules while enabled. Atomic: if Temporal refuses or cannot be reached, nothing is kept (503 schedule_unavailable).`,
    request: { body: ScheduleCreateRequest },
    responses: { '201': ok(Schedule, 'Created') },
    refusals: {
      '400': 'Malformed JSON; for an inline webhook `invalid_webhook_url` or `unknown_event_type`.',
      '422': INVALID,
      '429':
        '`schedule_quota_exceeded` (the tenant has max_schedules enabled schedules; only when created enabled), or `rate_limited` (with `Retry-After`).',
    },
  }),
  scheduleList: read({
    method: 'get',
    path: '/api/v1/schedules',
    operationId: 'listSchedules',
    routeName: 'schedule.list',
    summary: "The tenant's schedules, newest first, with next_fire_at (without their payloads)",
    request: { query: schedulesQuery },
    responses: { '200': ok(ScheduleList) },
  }),
  scheduleGet: read({
    method: 'get',
    path: '/api/v1/schedules/{schedule_id}',
    operationId: 'getSchedule',
    routeName: 'schedule.get',
    summary: 'A schedule with its payload and next_fire_at',
    request: { params: scheduleParams },
    responses: { '200': ok(Schedule) },
    refusals: { '404': SCHEDULE_NOT_FOUND },
  }),
  schedulePatch: write({
    method: 'patch',
    path: '/api/v1/schedules/{schedule_id}',
    operationId: 'updateSchedule',
    routeName: 'schedule.update',
    summary: 'Enable or disable a schedule, or change its cron, timezone, payload or labels',
    description:
      "enabled false pauses its Temporal Schedule and frees its max_schedules slot (the fire ledger is kept); enabled true unpauses it and takes a slot (429 schedule_quota_exceeded at the max). cron and timezone replace the Temporal Schedule's spec (from the next occurrence on); payload and labels apply to the fires that follow. The row and the Temporal Schedule change together: if Temporal refuses, nothing changes (503 schedule_unavailable).",
    request: { params: scheduleParams, body: SchedulePatchRequest },
    responses: { '200': ok(Schedule) },
    refusals: {
      '404': SCHEDULE_NOT_FOUND,
      '422': INVALID,
      '429': '`schedule_quota_exceeded` (enabling at max_schedules), or `rate_limited`.',
    },
  }),
  scheduleDelete: write({
    method: 'delete',
    path: '/api/v1/schedules/{schedule_id}',
    operationId: 'deleteSchedule',
    routeName: 'schedule.delete',
    summary: 'Delete a schedule, its Temporal Schedule and its fire ledger',
    request: { params: scheduleParams },
    responses: { '204': done('Deleted') },
    refusals: { '404': SCHEDULE_NOT_FOUND },
  }),
  scheduleFires: read({
    method: 'get',
    path: '/api/v1/schedules/{schedule_id}/fires',
    operationId: 'listScheduleFires',
    routeName: 'schedule.fires',
    summary: "The schedule's fire ledger: one row per occurrence, newest first",
    request: { params: scheduleParams, query: firesQuery },
    responses: { '200': ok(ScheduleFireList) },
    refusals: { '404': SCHEDULE_NOT_FOUND },
  }),
} satisfies Record<string, RunsOperation>;

/** The schedule routes (schedules/): create, list, read, change, delete, the fire ledger. */
export function mountScheduleRoutes(router: Router, deps: PlatformDeps): void {
  const ops = SCHEDULE_OPERATIONS;
  const scheduleIdOf = (ctx: Context) =>
    validated<{ schedule_id: string }>(ctx, 'params').schedule_id;
  mountOperation(router, ops.scheduleCreate, async (ctx) => {
    const body = validated<ScheduleCreateBody>(ctx, 'body');
    ctx.status = 201;
    ctx.body = await createSchedule(deps, principalOf(ctx), body);
  });
  mountOperation(router, ops.scheduleList, async (ctx) => {
    const q = validated<{ label_filter?: string[]; limit: number; offset: number }>(ctx, 'query');
    ctx.body = await listTenantSchedules(deps, principalOf(ctx).tenantId, {
      labels: labelPairsOf(q.label_filter),
      limit: q.limit,
      offset: q.offset,
    });
  });
  mountOperation(router, ops.scheduleGet, async (ctx) => {
    ctx.body = await getSchedule(deps, principalOf(ctx).tenantId, scheduleIdOf(ctx));
  });
  mountOperation(router, ops.schedulePatch, async (ctx) => {
    const body = validated<SchedulePatchBody>(ctx, 'body');
    ctx.body = await patchSchedule(deps, principalOf(ctx), scheduleIdOf(ctx), body);
  });
  mountOperation(router, ops.scheduleDelete, async (ctx) => {
    await deleteSchedule(deps, principalOf(ctx), scheduleIdOf(ctx));
    ctx.status = 204;
  });
  mountOperation(router, ops.scheduleFires, async (ctx) => {
    const page = validated<{ limit: number; offset: number }>(ctx, 'query');
    ctx.body = await listFires(deps, principalOf(ctx).tenantId, scheduleIdOf(ctx), page);
  });
}
