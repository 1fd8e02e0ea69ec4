import { z } from 'zod';
import { ulid } from '../ids';
import { existsRow, countRow, selectOneRow, sql, type DatabasePool } from '../pool';
import { someDockerHostAlive } from './docker-hosts';
import { inlineWebhookInsert, type InlineWebhookRow } from './webhooks';

export {
  ACTIVE_STATES,
  RUN_STATES,
  SLOT_STATES,
  TERMINAL_STATES,
  isTerminal,
  type RunState,
  type Transition,
  type TransitionFields,
  type TransitionOutcome,
} from '../../contracts/runs/run';
import {
  RUN_STATES,
  SLOT_STATES,
  type RunState,
  type RunWorkflowInput,
  type Transition,
  type TransitionOutcome,
} from '../../contracts/runs/run';

type Queryable = Pick<DatabasePool, 'query' | 'one' | 'maybeOne' | 'any' | 'oneFirst'>;

const runState = z.enum(RUN_STATES);

/** A row of runs.runs as `SELECT *` yields it: every column, in the table's order. */
export const runRow = z.object({
  track_id: z.string(),
  tenant_id: z.string(),
  key_id: z.string().nullable(),
  state: runState,
  reason: z.string().nullable(),
  image: z.string(),
  command: z.array(z.string()),
  env: z.record(z.string()),
  name: z.string().nullable(),
  tags: z.array(z.string()),
  submitted_at: z.string(),
  scheduled_start: z.string().nullable(),
  eligible_start: z.string(),
  expires_at: z.string().nullable(),
  working_hours_applied: z.boolean(),
  max_queue_seconds: z.number(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  exit_code: z.number().nullable(),
  container_id: z.string().nullable(),
  worker_id: z.string().nullable(),
  /** numeric: a decimal string. */
  cpu_limit: z.string(),
  memory_limit_mb: z.number(),
  timeout_seconds: z.number(),
  clamped: z.boolean(),
  metered: z.boolean(),
  stdout_file: z.string().nullable(),
  stderr_file: z.string().nullable(),
  /** bigint: a decimal string. */
  stdout_bytes: z.string(),
  stderr_bytes: z.string(),
  result_summary: z.string().nullable(),
  workflow_id: z.string().nullable(),
  node_ref: z.string().nullable(),
  updated_at: z.string(),
  /** The submit outbox (runs/0003): the workflow's input until its start is confirmed. */
  workflow_input: z.unknown(),
  workflow_task_queue: z.string().nullable(),
  quota_reservation_id: z.string().nullable(),
});
export type RunRow = z.infer<typeof runRow>;

export const runEventRow = z.object({
  event_id: z.string(),
  ts: z.string(),
  from_state: runState.nullable(),
  to_state: runState,
  event_type: z.string(),
  reason: z.string().nullable(),
  payload: z.record(z.unknown()),
});
export type RunEventRow = z.infer<typeof runEventRow>;

/** A `count(*)::int` (or an int4 count column) named `count`. */

export interface NewRun {
  trackId: string;
  tenantId: string;
  keyId: string;
  image: string;
  command: string[];
  env: Record<string, string>;
  name: string | null;
  tags: string[];
  scheduledStart: string | null;
  eligibleStart: string;
  expiresAt: string | null;
  workingHoursApplied: boolean;
  maxQueueSeconds: number;
  cpuLimit: string;
  memoryLimitMb: number;
  timeoutSeconds: number;
  clamped: boolean;
  metered: boolean;
  /** A metered run's seconds held by the quota service (services/runs/metering.ts); else null. */
  quotaReservationId: string | null;
  /** Kept until the run's workflow is confirmed started (see services/runs/workflow-starter.ts). */
  workflowInput: unknown;
  workflowTaskQueue: string;
  /** Its inline webhook, stored in the run's statement; none: absent or null. */
  webhook?: InlineWebhookRow | null;
}

/**
 * Stores a submitted run in ONE statement (one round trip, its own transaction): counts it
 * against the tenant's UTC day only while the count is under `dailyLimit`, and, only if it was
 * counted, inserts the run row, its first event (run.scheduled), its inline webhook if it has
 * one (a CTE only then: the common submit pays nothing for it). Returns false when the day's
 * limit was already reached (nothing written).
 */
export async function insertSubmittedRun(
  db: Pick<DatabasePool, 'oneFirst'>,
  run: NewRun,
  dailyLimit: number,
): Promise<boolean> {
  const eventPayload = { eligible_start: run.eligibleStart, clamped: run.clamped };
  const hook = run.webhook
    ? sql.fragment`, hook AS (${inlineWebhookInsert(run.tenantId, run.trackId, run.webhook)} FROM run)`
    : sql.fragment``;
  const stored = await db.oneFirst(sql.type(countRow)`
    WITH counted AS (
      INSERT INTO runs.daily_submissions AS d (tenant_id, day, count)
      SELECT ${run.tenantId}, (now() AT TIME ZONE 'UTC')::date, 1 WHERE ${dailyLimit}::int >= 1
      ON CONFLICT (tenant_id, day) DO UPDATE SET count = d.count + 1 WHERE d.count < ${dailyLimit}::int
      RETURNING 1),
    run AS (
      INSERT INTO runs.runs (track_id, tenant_id, key_id, image, command, env, name, tags, scheduled_start,
                             eligible_start, expires_at, working_hours_applied, max_queue_seconds, cpu_limit,
                             memory_limit_mb, timeout_seconds, clamped, metered, quota_reservation_id,
                             workflow_input, workflow_task_queue)
      SELECT ${run.trackId}, ${run.tenantId}, ${run.keyId}, ${run.image}, ${sql.jsonb(run.command)},
             ${sql.jsonb(run.env)}, ${run.name}, ${sql.array(run.tags, 'text')}, ${run.scheduledStart}::timestamptz,
             ${run.eligibleStart}::timestamptz, ${run.expiresAt}::timestamptz, ${run.workingHoursApplied},
             ${run.maxQueueSeconds}, ${run.cpuLimit}::numeric, ${run.memoryLimitMb}, ${run.timeoutSeconds},
             ${run.clamped}, ${run.metered}, ${run.quotaReservationId},
             ${sql.jsonb(run.workflowInput as never)}, ${run.workflowTaskQueue}
      FROM counted
      RETURNING track_id, tenant_id),
    event AS (
      INSERT INTO runs.run_events (event_id, track_id, tenant_id, from_state, to_state, event_type, reason, payload)
      SELECT ${ulid()}, track_id, tenant_id, NULL, 'scheduled', 'run.scheduled', NULL, ${sql.jsonb(eventPayload)}
      FROM run)
    ${hook}
    SELECT count(*)::int FROM run`);
  return stored === 1;
}

export async function submissionsToday(db: Queryable, tenantId: string): Promise<number> {
  const row = await db.maybeOne(sql.type(countRow)`
    SELECT count FROM runs.daily_submissions
    WHERE tenant_id = ${tenantId} AND day = (now() AT TIME ZONE 'UTC')::date`);
  return row?.count ?? 0;
}

export async function insertEvent(
  tx: Pick<DatabasePool, 'query'>,
  event: {
    trackId: string;
    tenantId: string;
    from: RunState | null;
    to: RunState;
    eventType: string;
    reason: string | null;
    payload: Record<string, unknown>;
    eventId?: string;
  },
): Promise<void> {
  await tx.query(sql.unsafe`
    INSERT INTO runs.run_events (event_id, track_id, tenant_id, from_state, to_state, event_type, reason, payload)
    VALUES (${event.eventId ?? ulid()}, ${event.trackId}, ${event.tenantId}, ${event.from}, ${event.to},
            ${event.eventType}, ${event.reason}, ${sql.jsonb(event.payload as never)})
    ON CONFLICT (event_id) DO NOTHING`);
}

const tenantIdRow = z.object({ tenant_id: z.string() });

/**
 * The one way a run changes state: the row update (conditional on the expected from-state)
 * and its event row commit together, so the event stream is a transactional outbox.
 * Idempotent: a retry whose event id is already stored reports `already_applied`.
 */
export async function transitionRun(pool: DatabasePool, t: Transition): Promise<TransitionOutcome> {
  return pool.transaction(async (tx) => {
    const seen = await tx.maybeOne(
      sql.type(selectOneRow)`SELECT 1 FROM runs.run_events WHERE event_id = ${t.eventId}`,
    );
    if (seen) return 'already_applied';
    const sets = [
      sql.fragment`state = ${t.to}`,
      sql.fragment`updated_at = date_trunc('milliseconds', clock_timestamp())`,
    ];
    if (t.reason !== undefined && t.to !== t.from) sets.push(sql.fragment`reason = ${t.reason}`);
    for (const [column, value] of Object.entries(t.fields ?? {})) {
      if (value === undefined) continue;
      if (value === 'now')
        sets.push(
          sql.fragment`${sql.identifier([column])} = date_trunc('milliseconds', clock_timestamp())`,
        );
      else
        sets.push(sql.fragment`${sql.identifier([column])} = ${value as string | number | null}`);
    }
    const updated = await tx.maybeOne(sql.type(tenantIdRow)`
      UPDATE runs.runs SET ${sql.join(sets, sql.fragment`, `)}
      WHERE track_id = ${t.trackId} AND state = ${t.from} RETURNING tenant_id`);
    if (!updated) return 'conflict';
    await insertEvent(tx, {
      eventId: t.eventId,
      trackId: t.trackId,
      tenantId: updated.tenant_id,
      from: t.from,
      to: t.to,
      eventType: t.eventType,
      reason: t.reason ?? null,
      payload: t.payload ?? {},
    });
    return 'applied';
  });
}

export async function findRun(
  db: Queryable,
  tenantId: string,
  trackId: string,
): Promise<RunRow | null> {
  return db.maybeOne(sql.type(runRow)`
    SELECT * FROM runs.runs WHERE track_id = ${trackId} AND tenant_id = ${tenantId}`);
}

const workerIdRow = z.object({ worker_id: z.string().nullable() });

/** The host that claimed the run (null: none yet, or no such run). */
export async function findRunWorkerId(
  db: Pick<DatabasePool, 'maybeOneFirst'>,
  trackId: string,
): Promise<string | null> {
  return db.maybeOneFirst(sql.type(workerIdRow)`
    SELECT worker_id FROM runs.runs WHERE track_id = ${trackId}`);
}

/** Where a run's row stands, for a workflow whose transition found it moved on (a reset). */
export const runStanding = z.object({
  state: runState,
  exitCode: z.number().nullable(),
  workerId: z.string().nullable(),
  containerId: z.string().nullable(),
  /** When the container was started (epoch ms), once it has been. */
  startedAtMs: z.number().nullable(),
});
export type RunStanding = z.infer<typeof runStanding>;

export async function findRunStanding(db: Queryable, trackId: string): Promise<RunStanding | null> {
  return db.maybeOne(sql.type(runStanding)`
    SELECT state, exit_code AS "exitCode", worker_id AS "workerId", container_id AS "containerId",
      (extract(epoch FROM started_at) * 1000)::float8 AS "startedAtMs"
    FROM runs.runs WHERE track_id = ${trackId}`);
}

/** What settling a metered run's seconds needs of its row. */
/** What settling a run's seconds reads of it; keyId is null for a DAG node run of a keyless workflow. */
export const runMetering = z.object({
  tenantId: z.string(),
  keyId: z.string().nullable(),
  timeoutSeconds: z.number(),
  quotaReservationId: z.string().nullable(),
});
export type RunMetering = z.infer<typeof runMetering>;

export async function findRunMetering(db: Queryable, trackId: string): Promise<RunMetering | null> {
  return db.maybeOne(sql.type(runMetering)`
    SELECT tenant_id AS "tenantId", key_id AS "keyId", timeout_seconds AS "timeoutSeconds",
           quota_reservation_id AS "quotaReservationId"
    FROM runs.runs WHERE track_id = ${trackId}`);
}

export async function listEvents(db: Queryable, trackId: string): Promise<readonly RunEventRow[]> {
  return db.any(sql.type(runEventRow)`
    SELECT event_id, ts, from_state, to_state, event_type, reason, payload FROM runs.run_events
    WHERE track_id = ${trackId} ORDER BY event_id`);
}

export async function listRuns(
  db: Queryable,
  tenantId: string,
  filter: { states: RunState[] | null; tag: string | null; limit: number; offset: number },
): Promise<readonly RunRow[]> {
  const conditions = [sql.fragment`tenant_id = ${tenantId}`];
  if (filter.states)
    conditions.push(sql.fragment`state = ANY(${sql.array(filter.states, 'text')})`);
  if (filter.tag !== null)
    conditions.push(sql.fragment`tags @> ${sql.array([filter.tag], 'text')}`);
  return db.any(sql.type(runRow)`
    SELECT * FROM runs.runs WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY track_id DESC LIMIT ${filter.limit} OFFSET ${filter.offset}`);
}

/**
 * FIFO position among the tenant's runs waiting for a slot (eligible and still scheduled),
 * 1-based; null when the run is not waiting.
 */
export async function queuePosition(db: Queryable, run: RunRow): Promise<number | null> {
  if (run.state !== 'scheduled') return null;
  return db.oneFirst(sql.type(countRow)`
    SELECT count(*)::int FROM runs.runs
    WHERE tenant_id = ${run.tenant_id} AND state = 'scheduled'
      AND (eligible_start, track_id) <= (${run.eligible_start}::timestamptz, ${run.track_id})`);
}

/** What taking a slot reads of the run. */
const slotRunRow = z.object({ tenant_id: z.string(), state: runState, eligible_start: z.string() });
/** `SELECT EXISTS (…)`: its one column, `exists`. */
const maxConcurrentRunsRow = z.object({ max_concurrent_runs: z.number() });

/**
 * Takes a concurrency slot for the run if a Docker host of its queue is alive (`no_worker`
 * otherwise: a run holds no slot while nothing can run it), the tenant has one free and no run
 * that became eligible earlier is still waiting (FIFO): scheduled → queued in one transaction,
 * under a lock on the tenant's quota row so two dispatchers cannot both take the last slot.
 * Without `anyHostQueue` (an execution started before hosts announced themselves) hosts are
 * not asked.
 */
export async function tryTakeSlot(
  pool: DatabasePool,
  input: { trackId: string; eventId: string; maxConcurrent: number | null; anyHostQueue?: string },
): Promise<TransitionOutcome | 'no_slot' | 'no_worker'> {
  return pool.transaction(async (tx) => {
    const seen = await tx.maybeOne(
      sql.type(selectOneRow)`SELECT 1 FROM runs.run_events WHERE event_id = ${input.eventId}`,
    );
    if (seen) return 'already_applied';
    const run = await tx.maybeOne(sql.type(slotRunRow)`
      SELECT tenant_id, state, eligible_start FROM runs.runs WHERE track_id = ${input.trackId}`);
    if (!run || run.state !== 'scheduled') return 'conflict';
    if (
      input.anyHostQueue !== undefined &&
      !(await tx.oneFirst(sql.type(existsRow)`SELECT ${someDockerHostAlive(input.anyHostQueue)}`))
    )
      return 'no_worker';
    const quota = await tx.one(sql.type(maxConcurrentRunsRow)`
      SELECT max_concurrent_runs FROM runs.tenant_quotas WHERE tenant_id = ${run.tenant_id} FOR UPDATE`);
    const max = Math.min(quota.max_concurrent_runs, input.maxConcurrent ?? Number.MAX_SAFE_INTEGER);
    const busy = await tx.oneFirst(sql.type(countRow)`
      SELECT count(*)::int FROM runs.runs
      WHERE tenant_id = ${run.tenant_id} AND state = ANY(${sql.array([...SLOT_STATES], 'text')})`);
    const ahead = await tx.oneFirst(sql.type(countRow)`
      SELECT count(*)::int FROM runs.runs
      WHERE tenant_id = ${run.tenant_id} AND state = 'scheduled' AND eligible_start <= now()
        AND (eligible_start, track_id) < (${run.eligible_start}::timestamptz, ${input.trackId})`);
    if (busy + ahead >= max) return 'no_slot';
    await tx.query(sql.unsafe`
      UPDATE runs.runs SET state = 'queued', updated_at = date_trunc('milliseconds', clock_timestamp())
      WHERE track_id = ${input.trackId}`);
    await insertEvent(tx, {
      eventId: input.eventId,
      trackId: input.trackId,
      tenantId: run.tenant_id,
      from: 'scheduled',
      to: 'queued',
      eventType: 'run.queued',
      reason: null,
      payload: { running_before: busy },
    });
    return 'applied';
  });
}

const trackIdRow = z.object({ track_id: z.string() });

/** The tenant's longest-waiting eligible runs, as many as it has free slots. */
export async function waitingHeads(
  pool: DatabasePool,
  tenantId: string,
  maxConcurrent: number | null,
): Promise<string[]> {
  const rows = await pool.any(sql.type(trackIdRow)`
    WITH free AS (
      SELECT LEAST(q.max_concurrent_runs, ${maxConcurrent ?? 2147483647}::int) - (
        SELECT count(*) FROM runs.runs r
        WHERE r.tenant_id = q.tenant_id AND r.state = ANY(${sql.array([...SLOT_STATES], 'text')})) AS slots
      FROM runs.tenant_quotas q WHERE q.tenant_id = ${tenantId})
    SELECT track_id FROM runs.runs
    WHERE tenant_id = ${tenantId} AND state = 'scheduled' AND eligible_start <= now()
    ORDER BY eligible_start, track_id
    LIMIT GREATEST(0, (SELECT slots FROM free))`);
  return rows.map((r) => r.track_id);
}

/**
 * A workflow input stored as jsonb at submit (from a typed input), handed on as stored: an object
 * with its ids (`idKeys`) is checked, the rest is the submit's contract (a row stored by an older
 * release may lack a field added since).
 */
export const storedWorkflowInput = <T>(label: string, idKeys: string[]) =>
  z.custom<T>(
    (value) =>
      typeof value === 'object' &&
      value !== null &&
      idKeys.every((key) => typeof (value as Record<string, unknown>)[key] === 'string'),
    label,
  );

const runWorkflowInput = storedWorkflowInput<RunWorkflowInput>('a run workflow input', [
  'trackId',
  'tenantId',
]);

/**
 * The workflow inputs of runs on `queue` whose workflow is not confirmed started, stored more
 * than `graceSeconds` ago (younger ones are still being started by their process), oldest first,
 * none of `skip`.
 */
export async function dueRunStarts(
  db: Pick<DatabasePool, 'anyFirst'>,
  w: { queue: string; graceSeconds: number; limit: number; skip: string[] },
): Promise<RunWorkflowInput[]> {
  const inputs = await db.anyFirst(sql.type(z.object({ workflow_input: runWorkflowInput }))`
    SELECT workflow_input FROM runs.runs
    WHERE workflow_input IS NOT NULL AND workflow_task_queue = ${w.queue}
      AND submitted_at < now() - make_interval(secs => ${w.graceSeconds})
      AND NOT (track_id = ANY(${sql.array(w.skip, 'text')}))
    ORDER BY submitted_at LIMIT ${w.limit}`);
  return [...inputs];
}

/** The workflows of these runs are started: the submit outbox has nothing left for them. */
export async function clearRunInputs(db: Queryable, trackIds: string[]): Promise<void> {
  await db.query(
    sql.unsafe`UPDATE runs.runs SET workflow_input = NULL WHERE track_id = ANY(${sql.array(trackIds, 'text')})`,
  );
}

/** Runs holding a Docker host now (pulling, running or paused), every tenant's. */
export async function countBusyRuns(db: Queryable): Promise<number> {
  return db.oneFirst(sql.type(countRow)`
    SELECT count(*)::int FROM runs.runs WHERE state IN ('pulling', 'running', 'paused')`);
}

/** The tenant's active runs (queued, pulling, running or paused): its concurrent runs' use. */
export async function countActiveRuns(db: Queryable, tenantId: string): Promise<number> {
  return db.oneFirst(sql.type(countRow)`
    SELECT count(*)::int FROM runs.runs
    WHERE tenant_id = ${tenantId} AND state IN ('queued', 'pulling', 'running', 'paused')`);
}

const startEstimateStats = z.object({
  /** Mean duration of the tenant's latest finished runs; null when it has none. */
  mean_seconds: z.number().nullable(),
  /** Its active runs (queued, pulling, running or paused). */
  busy: z.number(),
  /** Its concurrency slots (every tenant has its quota row, made with it). */
  slots: z.number(),
});
export type StartEstimateStats = z.infer<typeof startEstimateStats>;

/** What a waiting run's estimated start is computed from: `historyRuns` latest finished runs. */
export async function readStartEstimateStats(
  db: Queryable,
  tenantId: string,
  historyRuns: number,
): Promise<StartEstimateStats> {
  return db.one(sql.type(startEstimateStats)`
    WITH recent AS (
      SELECT extract(epoch FROM finished_at - started_at) AS seconds FROM runs.runs
      WHERE tenant_id = ${tenantId} AND finished_at IS NOT NULL AND started_at IS NOT NULL
      ORDER BY finished_at DESC LIMIT ${historyRuns})
    SELECT (SELECT avg(seconds)::float8 FROM recent) AS mean_seconds,
           (SELECT count(*)::int FROM runs.runs WHERE tenant_id = ${tenantId}
              AND state IN ('queued', 'pulling', 'running', 'paused')) AS busy,
           (SELECT max_concurrent_runs FROM runs.tenant_quotas WHERE tenant_id = ${tenantId}) AS slots`);
}

/** Deletes the tenant's run (its events and samples go with it by cascade). */
export async function deleteRunRow(
  db: Queryable,
  tenantId: string,
  trackId: string,
): Promise<void> {
  await db.query(
    sql.unsafe`DELETE FROM runs.runs WHERE track_id = ${trackId} AND tenant_id = ${tenantId}`,
  );
}

const expiredRun = z.object({ track_id: z.string(), tenant_id: z.string() });
export type ExpiredRun = z.infer<typeof expiredRun>;

/**
 * Terminal runs finished longer ago than their tenant's retention_days, oldest first, at most
 * `limit`.
 */
export async function expiredRuns(db: Queryable, limit: number): Promise<ExpiredRun[]> {
  const rows = await db.any(sql.type(expiredRun)`
    SELECT r.track_id, r.tenant_id FROM runs.runs r
    JOIN runs.tenant_quotas q ON q.tenant_id = r.tenant_id
    WHERE r.finished_at IS NOT NULL
      AND r.finished_at < now() - make_interval(days => q.retention_days)
    ORDER BY r.finished_at LIMIT ${limit}`);
  return [...rows];
}

/** Deletes these runs, whatever their tenant (events and samples go with them by cascade). */
export async function deleteRuns(db: Queryable, trackIds: string[]): Promise<void> {
  await db.query(sql.unsafe`
    DELETE FROM runs.runs WHERE track_id = ANY(${sql.array(trackIds, 'text')})`);
}
