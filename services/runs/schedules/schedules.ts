import {
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type ScheduleOptions,
  type ScheduleUpdateOptions,
} from '@temporalio/client';
import { ulid } from '../../../db/ids';
import { auditOf } from '../audit';
import type { KeyPrincipal } from '../../../db/runs/tenants';
import {
  deleteSchedule as deleteScheduleRow,
  findSchedule,
  insertSchedule,
  listScheduleFires,
  listSchedules,
  lockEnabledScheduleCount,
  updateSchedule,
  type ScheduleChanges,
  type ScheduleFilter,
  type ScheduleRow,
} from '../../../db/runs/schedules';
import type { Tx } from '../../../db/pool';
import type { PlatformDeps } from '../../../platform/deps';
import { executionSearchAttributes } from '../../../contracts/shared/search-attributes';
import { scheduleFireSummary } from '../../../contracts/runs/summaries';
import {
  SCHEDULE_FIRE_WORKFLOW_TYPE,
  scheduleFireWorkflowIdBase,
  scheduleTemporalId,
  type ScheduleFireWorkflowInput,
} from '../../../contracts/runs/schedule-fire';
import { runsError } from '../errors';
import { inlineWebhookRow, type InlineWebhookBody } from '../webhooks/inline';
import { runsQueue } from '../webhooks/starter';
import { presentSchedule, presentScheduleFire, presentScheduleSummary } from './models';
import { payloadJsonOf } from '../payloads';
import {
  assertCronAndZone,
  cronSpecOf,
  nextActionTime,
  scheduleUnavailable,
} from './temporal-schedule';

/**
 * Occurrences missed longer ago than this (the worker or Temporal down) are not fired on recovery;
 * those within it fire late, each with its honest fire_delay_seconds.
 */
export const SCHEDULE_CATCHUP_WINDOW = '24 hours';

/**
 * A tenant's schedules: each row has one Temporal Schedule schedule/<schedule_id>, changed in the
 * transaction that changes the row (the Temporal call is made before the commit, so a refusal
 * rolls the row back: 503 schedule_unavailable, nothing changed). max_schedules counts enabled
 * schedules, under a lock on the tenant's quota row. Each change is audited (schedule.create,
 * schedule.update, schedule.delete).
 */

type Deps = Pick<PlatformDeps, 'pool' | 'config' | 'temporal' | 'logger'>;

export interface ScheduleCreateBody {
  cron: string;
  timezone: string;
  payload: unknown;
  labels: Record<string, string>;
  enabled: boolean;
  webhook?: InlineWebhookBody;
}

export interface SchedulePatchBody {
  cron?: string;
  timezone?: string;
  payload?: unknown;
  labels?: Record<string, string>;
  enabled?: boolean;
}

const notFound = () => runsError('schedule_not_found');

const audit = auditOf('schedule');

/** The Temporal Schedule of a row: its spec, action, policies and state (paused = disabled). */
export function scheduleOptionsOf(
  deps: Deps,
  row: ScheduleRow,
): Omit<ScheduleOptions, 'scheduleId'> & ScheduleUpdateOptions {
  const input: ScheduleFireWorkflowInput = {
    scheduleId: row.schedule_id,
    tenantId: row.tenant_id,
    cron: row.cron,
    timezone: row.timezone,
  };
  return {
    spec: cronSpecOf(row.cron, row.timezone),
    action: {
      type: 'startWorkflow',
      workflowType: SCHEDULE_FIRE_WORKFLOW_TYPE,
      workflowId: scheduleFireWorkflowIdBase(row.schedule_id),
      taskQueue: runsQueue(deps),
      args: [input],
      typedSearchAttributes: executionSearchAttributes(row.tenant_id, 'runs'),
      ...scheduleFireSummary(input),
    },
    policies: { overlap: ScheduleOverlapPolicy.ALLOW_ALL, catchupWindow: SCHEDULE_CATCHUP_WINDOW },
    state: { paused: !row.enabled, note: row.enabled ? undefined : 'disabled via the runs API' },
    typedSearchAttributes: executionSearchAttributes(row.tenant_id, 'runs'),
  };
}

/** next_fire_at: the Temporal Schedule's next action time; null when paused or unknown. */
const nextFireAt = (deps: Deps, row: ScheduleRow) =>
  row.enabled ? nextActionTime(deps, scheduleTemporalId(row.schedule_id)) : Promise.resolve(null);

const unavailable = (deps: Deps, error: unknown, scheduleId: string) =>
  scheduleUnavailable(deps, error, scheduleTemporalId(scheduleId));

async function assertSlot(tx: Tx, tenantId: string): Promise<void> {
  const { max, enabled } = await lockEnabledScheduleCount(tx, tenantId);
  if (enabled >= max)
    throw runsError('schedule_quota_exceeded', { details: { max_schedules: max } });
}

/**
 * Creates a schedule and its Temporal Schedule, all or nothing: the row is inserted and the
 * Temporal Schedule created before the commit; if Temporal refuses, the row is rolled back (503).
 */
export async function createSchedule(
  deps: Deps,
  principal: KeyPrincipal,
  body: ScheduleCreateBody,
) {
  assertCronAndZone(body);
  const payloadJson = payloadJsonOf(body.payload);
  const webhook = inlineWebhookRow(body.webhook);
  const scheduleId = ulid();
  const row = await deps.pool.transaction(async (tx) => {
    if (body.enabled) await assertSlot(tx, principal.tenantId);
    const created = await insertSchedule(tx, {
      scheduleId,
      tenantId: principal.tenantId,
      cron: body.cron,
      timezone: body.timezone,
      payloadJson,
      labels: body.labels,
      enabled: body.enabled,
      webhook,
    });
    await audit(tx, principal, 'create', scheduleId, {
      cron: body.cron,
      timezone: body.timezone,
      enabled: body.enabled,
      inline_webhook: webhook !== null,
    });
    try {
      await deps.temporal.schedule.create({
        scheduleId: scheduleTemporalId(scheduleId),
        ...scheduleOptionsOf(deps, created),
      });
    } catch (error) {
      throw unavailable(deps, error, scheduleId);
    }
    return created;
  });
  return presentSchedule(row, await nextFireAt(deps, row));
}

export async function getSchedule(deps: Deps, tenantId: string, scheduleId: string) {
  const row = await findSchedule(deps.pool, tenantId, scheduleId);
  if (!row) throw notFound();
  return presentSchedule(row, await nextFireAt(deps, row));
}

export async function listTenantSchedules(deps: Deps, tenantId: string, filter: ScheduleFilter) {
  const rows = await listSchedules(deps.pool, tenantId, filter);
  const next = await Promise.all(rows.map((row) => nextFireAt(deps, row)));
  return {
    schedules: rows.map((row, i) => presentScheduleSummary(row, next[i] ?? null)),
    limit: filter.limit,
    offset: filter.offset,
  };
}

/**
 * Changes a schedule and its Temporal Schedule together (the row locked; the Temporal update
 * made before the commit). Enabling a disabled schedule takes a max_schedules slot (429 at the
 * max); disabling pauses the Temporal Schedule and frees the slot.
 */
export async function patchSchedule(
  deps: Deps,
  principal: KeyPrincipal,
  scheduleId: string,
  body: SchedulePatchBody,
) {
  assertCronAndZone(body);
  const changes: ScheduleChanges = {
    cron: body.cron,
    timezone: body.timezone,
    labels: body.labels,
    enabled: body.enabled,
    payloadJson: 'payload' in body ? payloadJsonOf(body.payload) : undefined,
  };
  const row = await deps.pool.transaction(async (tx) => {
    const before = await findSchedule(tx, principal.tenantId, scheduleId, true);
    if (!before) throw notFound();
    if (body.enabled === true && !before.enabled) await assertSlot(tx, principal.tenantId);
    const after = await updateSchedule(tx, scheduleId, changes);
    await audit(tx, principal, 'update', scheduleId, {
      fields: Object.keys(body).sort(),
      enabled: after.enabled,
    });
    try {
      await deps.temporal.schedule
        .getHandle(scheduleTemporalId(scheduleId))
        .update(() => scheduleOptionsOf(deps, after));
    } catch (error) {
      throw unavailable(deps, error, scheduleId);
    }
    return after;
  });
  return presentSchedule(row, await nextFireAt(deps, row));
}

/**
 * Deletes the schedule, its fire ledger and its Temporal Schedule (one already gone is fine);
 * a Temporal refusal rolls the row back (503).
 */
export async function deleteSchedule(deps: Deps, principal: KeyPrincipal, scheduleId: string) {
  await deps.pool.transaction(async (tx) => {
    const row = await findSchedule(tx, principal.tenantId, scheduleId, true);
    if (!row) throw notFound();
    await deleteScheduleRow(tx, scheduleId);
    await audit(tx, principal, 'delete', scheduleId);
    try {
      await deps.temporal.schedule.getHandle(scheduleTemporalId(scheduleId)).delete();
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw unavailable(deps, error, scheduleId);
    }
  });
}

export async function listFires(
  deps: Deps,
  tenantId: string,
  scheduleId: string,
  page: { limit: number; offset: number },
) {
  if (!(await findSchedule(deps.pool, tenantId, scheduleId))) throw notFound();
  const fires = await listScheduleFires(deps.pool, scheduleId, page);
  return { fires: fires.map(presentScheduleFire), limit: page.limit, offset: page.offset };
}
