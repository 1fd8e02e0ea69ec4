import { z } from 'zod';
import { countRow, selectOneRow, sql, type DatabasePool } from '../pool';
import { inlineWebhookInsert, type InlineWebhookRow } from './webhooks';

/**
 * Schedules (migration runs/0011): the row a POST makes (under the tenant's max_schedules, which
 * counts enabled schedules), the reads, the changes, and the fire ledger. The Temporal Schedule
 * schedule/<schedule_id> decides when an occurrence is due; recordScheduleFire writes its ledger
 * row and its `schedule.fired` notice in one statement, once per (schedule_id, occurrence).
 */

type Queryable = Pick<DatabasePool, 'query' | 'one' | 'maybeOne' | 'any' | 'oneFirst'>;

/** The notice a schedule's fire publishes (services/runs/webhooks/catalogue.ts). */
export const SCHEDULE_FIRED_EVENT = 'schedule.fired';

/** The outcomes of a fire ledger row (the table's CHECK). */
export const SCHEDULE_FIRE_OUTCOMES = ['enqueued', 'skipped_disabled'] as const;
export type ScheduleFireOutcome = (typeof SCHEDULE_FIRE_OUTCOMES)[number];

export const scheduleRow = z.object({
  schedule_id: z.string(),
  tenant_id: z.string(),
  cron: z.string(),
  timezone: z.string(),
  /** Any JSON value, opaque. */
  payload: z.unknown(),
  labels: z.record(z.string()),
  enabled: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type ScheduleRow = z.infer<typeof scheduleRow>;
const SCHEDULE_COLUMNS = sql.fragment`
  schedule_id, tenant_id, cron, timezone, payload, labels, enabled, created_at, updated_at`;

/** A fire ledger row, as listScheduleFires and recordScheduleFire select it. */
export const scheduleFireRow = z.object({
  occurrence: z.string(),
  /** The local wall time fired for (`YYYY-MM-DDTHH:MM:SS`); null for fires before the rule. */
  wall_time: z.string().nullable(),
  fired_at: z.string(),
  /** numeric: a decimal string. */
  fire_delay_seconds: z.string(),
  outcome: z.enum(SCHEDULE_FIRE_OUTCOMES),
  deliveries_enqueued: z.number(),
  event_id: z.string().nullable(),
});
export type ScheduleFireRow = z.infer<typeof scheduleFireRow>;

const NOW = sql.fragment`date_trunc('milliseconds', now())`;

/**
 * Takes the tenant's quota row FOR UPDATE, so its schedule creations and enablings are
 * serialized, and answers its max_schedules and enabled schedules.
 */
export async function lockEnabledScheduleCount(
  tx: Queryable,
  tenantId: string,
): Promise<{ max: number; enabled: number }> {
  const max = await tx.oneFirst(sql.type(z.object({ max_schedules: z.number() }))`
    SELECT max_schedules FROM runs.tenant_quotas WHERE tenant_id = ${tenantId}
    FOR UPDATE`);
  // A statement of its own: its snapshot is taken after the lock.
  const enabled = await tx.oneFirst(sql.type(countRow)`
    SELECT count(*)::int FROM runs.schedules WHERE tenant_id = ${tenantId} AND enabled`);
  return { max, enabled };
}

export interface NewSchedule {
  scheduleId: string;
  tenantId: string;
  cron: string;
  timezone: string;
  payloadJson: string;
  labels: Record<string, string>;
  enabled: boolean;
  webhook: InlineWebhookRow | null;
}

export async function insertSchedule(tx: Queryable, s: NewSchedule): Promise<ScheduleRow> {
  const row = await tx.one(sql.type(scheduleRow)`
    INSERT INTO runs.schedules (schedule_id, tenant_id, cron, timezone, payload, labels, enabled)
    VALUES (${s.scheduleId}, ${s.tenantId}, ${s.cron}, ${s.timezone}, ${s.payloadJson}::jsonb,
            ${JSON.stringify(s.labels)}::jsonb, ${s.enabled})
    RETURNING ${SCHEDULE_COLUMNS}`);
  if (s.webhook)
    await tx.query(sql.unsafe`${inlineWebhookInsert(s.tenantId, s.scheduleId, s.webhook)}`);
  return row;
}

export async function findSchedule(
  db: Queryable,
  tenantId: string,
  scheduleId: string,
  lock = false,
): Promise<ScheduleRow | null> {
  return db.maybeOne(sql.type(scheduleRow)`
    SELECT ${SCHEDULE_COLUMNS} FROM runs.schedules
    WHERE schedule_id = ${scheduleId} AND tenant_id = ${tenantId}
    ${lock ? sql.fragment`FOR UPDATE` : sql.fragment``}`);
}

export interface ScheduleFilter {
  labels: [string, string][];
  limit: number;
  offset: number;
}

/** The tenant's schedules, newest first. */
export async function listSchedules(
  db: Queryable,
  tenantId: string,
  filter: ScheduleFilter,
): Promise<readonly ScheduleRow[]> {
  const conditions = [sql.fragment`tenant_id = ${tenantId}`];
  for (const [key, value] of filter.labels)
    conditions.push(sql.fragment`labels @> ${JSON.stringify({ [key]: value })}::jsonb`);
  return db.any(sql.type(scheduleRow)`
    SELECT ${SCHEDULE_COLUMNS} FROM runs.schedules
    WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY schedule_id DESC LIMIT ${filter.limit} OFFSET ${filter.offset}`);
}

export interface ScheduleChanges {
  cron?: string;
  timezone?: string;
  payloadJson?: string;
  labels?: Record<string, string>;
  enabled?: boolean;
}

/** Applies the changes given; answers the row after them. */
export async function updateSchedule(
  tx: Queryable,
  scheduleId: string,
  c: ScheduleChanges,
): Promise<ScheduleRow> {
  const sets = [sql.fragment`updated_at = ${NOW}`];
  if (c.cron !== undefined) sets.push(sql.fragment`cron = ${c.cron}`);
  if (c.timezone !== undefined) sets.push(sql.fragment`timezone = ${c.timezone}`);
  if (c.payloadJson !== undefined) sets.push(sql.fragment`payload = ${c.payloadJson}::jsonb`);
  if (c.labels !== undefined) sets.push(sql.fragment`labels = ${JSON.stringify(c.labels)}::jsonb`);
  if (c.enabled !== undefined) sets.push(sql.fragment`enabled = ${c.enabled}`);
  return tx.one(sql.type(scheduleRow)`
    UPDATE runs.schedules SET ${sql.join(sets, sql.fragment`, `)}
    WHERE schedule_id = ${scheduleId}
    RETURNING ${SCHEDULE_COLUMNS}`);
}

/** Deletes the schedule, its fire ledger (cascade) and its inline webhook's subscription. */
export async function deleteSchedule(tx: Queryable, scheduleId: string): Promise<void> {
  await tx.query(sql.unsafe`
    UPDATE runs.webhook_endpoints SET deleted_at = ${NOW}
    WHERE inline_for = ${scheduleId} AND deleted_at IS NULL`);
  await tx.query(sql.unsafe`DELETE FROM runs.schedules WHERE schedule_id = ${scheduleId}`);
}

/** The schedule's fire ledger, newest occurrence first. */
export async function listScheduleFires(
  db: Queryable,
  scheduleId: string,
  page: { limit: number; offset: number },
): Promise<readonly ScheduleFireRow[]> {
  return db.any(sql.type(scheduleFireRow)`
    SELECT occurrence, ${wallText(sql.identifier(['wall_time']))} AS wall_time, fired_at,
           fire_delay_seconds::text, outcome, deliveries_enqueued, event_id
    FROM runs.schedule_fires WHERE schedule_id = ${scheduleId}
    ORDER BY occurrence DESC LIMIT ${page.limit} OFFSET ${page.offset}`);
}

const isoMs = (value: ReturnType<typeof sql.identifier>) =>
  sql.fragment`to_char(${value} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const wallText = (value: ReturnType<typeof sql.identifier>) =>
  sql.fragment`to_char(${value}, 'YYYY-MM-DD"T"HH24:MI:SS')`;

export type RecordFireOutcome =
  | { outcome: 'recorded'; fire: ScheduleFireRow }
  | { outcome: 'already_recorded' }
  | { outcome: 'schedule_deleted' };

/**
 * Records the fire of one occurrence, in one statement: the ledger row (fired_at now,
 * fire_delay_seconds = fired_at − occurrence, never below 0; `enqueued` with the count of the
 * subscriptions that match `schedule.fired` now, or `skipped_disabled` if the row is disabled)
 * and, when enqueued, the `schedule.fired` notice (event `eventId`). Keyed by (schedule_id,
 * occurrence), ON CONFLICT DO NOTHING: a second call for the same occurrence writes nothing.
 * A deleted schedule has no row to fire: nothing is written.
 */
export async function recordScheduleFire(
  db: Queryable,
  fire: { scheduleId: string; occurrence: string; wallTime: string | null; taskQueue: string },
  eventId: string,
): Promise<RecordFireOutcome> {
  const { scheduleId, occurrence, wallTime } = fire;
  const recorded = await db.maybeOne(sql.type(scheduleFireRow)`
    WITH s AS (
      SELECT schedule_id, tenant_id, enabled, labels, payload,
             ${occurrence}::timestamptz AS occurrence, ${wallTime}::timestamp AS wall_time,
             ${NOW} AS fired_at
      FROM runs.schedules WHERE schedule_id = ${scheduleId}),
    matching AS (
      SELECT count(*)::int AS n FROM runs.webhook_endpoints e, s
      WHERE e.deleted_at IS NULL AND ${SCHEDULE_FIRED_EVENT} = ANY(e.events)
        AND ((e.inline_for IS NULL AND e.tenant_id = s.tenant_id) OR e.inline_for = s.schedule_id)),
    fire AS (
      INSERT INTO runs.schedule_fires (schedule_id, occurrence, wall_time, fired_at,
                                       fire_delay_seconds, outcome, deliveries_enqueued, event_id)
      SELECT s.schedule_id, s.occurrence, s.wall_time, s.fired_at,
             greatest(0, round(extract(epoch FROM s.fired_at - s.occurrence)::numeric, 3)),
             CASE WHEN s.enabled THEN 'enqueued' ELSE 'skipped_disabled' END,
             CASE WHEN s.enabled THEN matching.n ELSE 0 END,
             CASE WHEN s.enabled THEN ${eventId} END
      FROM s CROSS JOIN matching
      -- Either key: this occurrence, or this wall time at its other instant (fall back).
      ON CONFLICT DO NOTHING
      RETURNING *),
    notice AS (
      INSERT INTO runs.webhook_notices (event_id, tenant_id, event_type, resource_type,
                                        resource_id, data, workflow_task_queue)
      SELECT fire.event_id, s.tenant_id, ${SCHEDULE_FIRED_EVENT}, 'schedule', s.schedule_id,
             jsonb_build_object('schedule_id', s.schedule_id,
                                'occurrence', ${isoMs(sql.identifier(['fire', 'occurrence']))},
                                'wall_time', ${wallText(sql.identifier(['fire', 'wall_time']))},
                                'fired_at', ${isoMs(sql.identifier(['fire', 'fired_at']))},
                                'fire_delay_seconds', fire.fire_delay_seconds,
                                'labels', s.labels, 'payload', s.payload),
             ${fire.taskQueue}
      FROM fire JOIN s USING (schedule_id)
      WHERE fire.event_id IS NOT NULL
      RETURNING event_id)
    SELECT fire.occurrence, ${wallText(sql.identifier(['fire', 'wall_time']))} AS wall_time, fire.fired_at,
           fire.fire_delay_seconds::text, fire.outcome,
           fire.deliveries_enqueued, fire.event_id
    FROM fire LEFT JOIN notice USING (event_id)`);
  if (recorded) return { outcome: 'recorded', fire: recorded };
  const exists =
    (await db.maybeOne(sql.type(selectOneRow)`
      SELECT 1 FROM runs.schedules WHERE schedule_id = ${scheduleId}`)) !== null;
  return exists ? { outcome: 'already_recorded' } : { outcome: 'schedule_deleted' };
}
