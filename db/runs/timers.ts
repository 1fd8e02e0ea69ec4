import { z } from 'zod';
import { countRow, sql, type DatabasePool } from '../pool';
import type { TimerWorkflowInput } from '../../contracts/runs/timer';
import { inlineWebhookInsert, type InlineWebhookRow } from './webhooks';

/**
 * Timers (migration runs/0010): the row a POST makes (under the tenant's pending-timer quota,
 * with its inline webhook), the reads, and the two conditional changes that decide a timer's
 * end: fired (with its `timer.fired` notice, in the same statement) or cancelled. Whichever
 * commits first wins; the other finds the row moved on.
 */

type Queryable = Pick<DatabasePool, 'query' | 'one' | 'maybeOne' | 'any' | 'oneFirst'>;

/** The states of the table's CHECK. */
export const TIMER_STATES = ['pending', 'fired', 'cancelled'] as const;
export type TimerState = (typeof TIMER_STATES)[number];

/** The notice a fired timer publishes (services/runs/webhooks/catalogue.ts). */
export const TIMER_FIRED_EVENT = 'timer.fired';

const timerState = z.enum(TIMER_STATES);

export const timerRow = z.object({
  timer_id: z.string(),
  tenant_id: z.string(),
  state: timerState,
  fire_at: z.string(),
  /** Any JSON value, opaque. */
  payload: z.unknown(),
  labels: z.record(z.string()),
  created_at: z.string(),
  fired_at: z.string().nullable(),
  cancelled_at: z.string().nullable(),
  /** numeric: a decimal string, null until fired. */
  fire_delay_seconds: z.string().nullable(),
});
export type TimerRow = z.infer<typeof timerRow>;
const TIMER_COLUMNS = sql.fragment`
  timer_id, tenant_id, state, fire_at, payload, labels, created_at, fired_at, cancelled_at,
  fire_delay_seconds`;

const NOW = sql.fragment`date_trunc('milliseconds', now())`;

/**
 * Takes the tenant's quota row FOR UPDATE, so its timer creations are serialized, and answers
 * its max_pending_timers and pending timers. Call it in the transaction that then inserts.
 */
export async function lockPendingTimerCount(
  tx: Queryable,
  tenantId: string,
): Promise<{ max: number; pending: number }> {
  const max = await tx.oneFirst(sql.type(z.object({ max_pending_timers: z.number() }))`
    SELECT max_pending_timers FROM runs.tenant_quotas WHERE tenant_id = ${tenantId}
    FOR UPDATE`);
  // A statement of its own: its snapshot is taken after the lock, so it sees the timer that the
  // creation holding the lock before us committed.
  const pending = await tx.oneFirst(sql.type(countRow)`
    SELECT count(*)::int FROM runs.timers WHERE tenant_id = ${tenantId} AND state = 'pending'`);
  return { max, pending };
}

export interface NewTimer {
  timerId: string;
  tenantId: string;
  fireAt: string;
  /** Any JSON value, serialized. */
  payloadJson: string;
  labels: Record<string, string>;
  /** The runs queue its workflow starts on (this deployment's). */
  workflowTaskQueue: string;
  webhook: InlineWebhookRow | null;
}

/** Inserts a pending timer (fire_at kept to the millisecond) and its inline webhook. */
export async function insertTimer(tx: Queryable, t: NewTimer): Promise<TimerRow> {
  const row = await tx.one(sql.type(timerRow)`
    INSERT INTO runs.timers (timer_id, tenant_id, fire_at, payload, labels, workflow_task_queue)
    VALUES (${t.timerId}, ${t.tenantId}, date_trunc('milliseconds', ${t.fireAt}::timestamptz),
            ${t.payloadJson}::jsonb, ${JSON.stringify(t.labels)}::jsonb, ${t.workflowTaskQueue})
    RETURNING ${TIMER_COLUMNS}`);
  if (t.webhook)
    await tx.query(sql.unsafe`${inlineWebhookInsert(t.tenantId, t.timerId, t.webhook)}`);
  return row;
}

export async function findTimer(
  db: Queryable,
  tenantId: string,
  timerId: string,
): Promise<TimerRow | null> {
  return db.maybeOne(sql.type(timerRow)`
    SELECT ${TIMER_COLUMNS} FROM runs.timers
    WHERE timer_id = ${timerId} AND tenant_id = ${tenantId}`);
}

export interface TimerFilter {
  /** null: every state. */
  states: TimerState[] | null;
  /** Every pair must be among the timer's labels. */
  labels: [string, string][];
  limit: number;
  offset: number;
}

/** The tenant's timers, newest first. */
export async function listTimers(
  db: Queryable,
  tenantId: string,
  filter: TimerFilter,
): Promise<readonly TimerRow[]> {
  const conditions = [sql.fragment`tenant_id = ${tenantId}`];
  if (filter.states)
    conditions.push(sql.fragment`state = ANY(${sql.array(filter.states, 'text')})`);
  for (const [key, value] of filter.labels)
    conditions.push(sql.fragment`labels @> ${JSON.stringify({ [key]: value })}::jsonb`);
  return db.any(sql.type(timerRow)`
    SELECT ${TIMER_COLUMNS} FROM runs.timers
    WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY timer_id DESC LIMIT ${filter.limit} OFFSET ${filter.offset}`);
}

const timerIdRow = z.object({ timer_id: z.string() });
const timerStateRow = z.object({ state: timerState });

/**
 * Cancels a pending timer in one conditional UPDATE. Answers `cancelled` when this call
 * cancelled it, else the state the row has now (`fired`, `cancelled`), or null when the tenant
 * has no such timer. The second read is a statement of its own, so it sees a fire that
 * committed while the UPDATE waited for the row.
 */
export async function cancelTimer(
  tx: Queryable,
  tenantId: string,
  timerId: string,
): Promise<{ outcome: 'cancelled' } | { outcome: 'unchanged'; state: TimerState } | null> {
  const cancelled =
    (await tx.maybeOne(sql.type(timerIdRow)`
      UPDATE runs.timers SET state = 'cancelled', cancelled_at = ${NOW}
      WHERE timer_id = ${timerId} AND tenant_id = ${tenantId} AND state = 'pending'
      RETURNING timer_id`)) !== null;
  if (cancelled) return { outcome: 'cancelled' };
  const state = await tx.maybeOne(sql.type(timerStateRow)`
    SELECT state FROM runs.timers WHERE timer_id = ${timerId} AND tenant_id = ${tenantId}`);
  return state ? { outcome: 'unchanged', state: state.state } : null;
}

const ISO_MS = (column: string) =>
  sql.fragment`to_char(${sql.identifier([column])} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export type FireOutcome =
  | { outcome: 'fired'; eventId: string; fireDelaySeconds: string }
  | { outcome: 'unchanged'; state: TimerState }
  | { outcome: 'missing' };

const firedTimerRow = z.object({ event_id: z.string(), fire_delay_seconds: z.string() });

/**
 * Fires a pending timer: the row pending → fired (fired_at now, fire_delay_seconds = fired_at −
 * fire_at, never below 0) and its `timer.fired` notice (event `eventId`), in one statement, so
 * both or neither are written. A timer already fired or cancelled is left as it is (answered
 * `unchanged` with its state): a retried call writes nothing twice.
 */
export async function fireTimer(
  db: Queryable,
  timerId: string,
  eventId: string,
): Promise<FireOutcome> {
  const fired = await db.maybeOne(sql.type(firedTimerRow)`
    WITH fired AS (
      UPDATE runs.timers SET state = 'fired', fired_at = ${NOW},
        fire_delay_seconds = greatest(0, round(extract(epoch FROM ${NOW} - fire_at)::numeric, 3))
      WHERE timer_id = ${timerId} AND state = 'pending'
      RETURNING timer_id, tenant_id, fire_at, fired_at, fire_delay_seconds, labels, payload,
                workflow_task_queue),
    notice AS (
      INSERT INTO runs.webhook_notices (event_id, tenant_id, event_type, resource_type,
                                        resource_id, data, workflow_task_queue)
      SELECT ${eventId}, tenant_id, ${TIMER_FIRED_EVENT}, 'timer', timer_id,
             jsonb_build_object('timer_id', timer_id, 'fire_at', ${ISO_MS('fire_at')},
                                'fired_at', ${ISO_MS('fired_at')},
                                'fire_delay_seconds', fire_delay_seconds,
                                'labels', labels, 'payload', payload),
             workflow_task_queue
      FROM fired
      RETURNING event_id)
    SELECT notice.event_id, fired.fire_delay_seconds::text
    FROM fired CROSS JOIN notice`);
  if (fired)
    return {
      outcome: 'fired',
      eventId: fired.event_id,
      fireDelaySeconds: fired.fire_delay_seconds,
    };
  const row = await db.maybeOne(sql.type(timerStateRow)`
    SELECT state FROM runs.timers WHERE timer_id = ${timerId}`);
  return row ? { outcome: 'unchanged', state: row.state } : { outcome: 'missing' };
}

const timerStart = z.object({
  timerId: z.string(),
  tenantId: z.string(),
  /** ISO-8601 UTC. */
  fireAt: z.string(),
}) satisfies z.ZodType<TimerWorkflowInput>;

/**
 * Pending timers on `queue` whose workflow is not started, made more than `graceSeconds` ago
 * (younger ones are still being started by their process), oldest first, none of `skip`: the
 * inputs of their workflows.
 */
export async function dueTimerStarts(
  db: Queryable,
  w: { queue: string; graceSeconds: number; limit: number; skip: string[] },
): Promise<TimerWorkflowInput[]> {
  const rows = await db.any(sql.type(timerStart)`
    SELECT timer_id AS "timerId", tenant_id AS "tenantId", fire_at AS "fireAt"
    FROM runs.timers
    WHERE NOT workflow_started AND state = 'pending' AND workflow_task_queue = ${w.queue}
      AND created_at < now() - make_interval(secs => ${w.graceSeconds})
      AND NOT (timer_id = ANY(${sql.array(w.skip, 'text')}))
    ORDER BY created_at LIMIT ${w.limit}`);
  return [...rows];
}

/** Temporal has these timers' workflows. */
export async function markTimerWorkflowsStarted(db: Queryable, timerIds: string[]): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE runs.timers SET workflow_started = true
    WHERE timer_id = ANY(${sql.array(timerIds, 'text')})`);
}
