import { z } from 'zod';
import { countRow, sql, type DatabasePool } from '../pool';
import { DISPATCH_LEASE } from './deliveries';

/**
 * Webhook subscriptions and deliveries as the REST API reads and changes them (migration
 * runs/0008). The delivery engine (db/runs/deliveries.ts) makes and attempts deliveries; here are
 * the tenant's endpoints, its inline webhooks, the reads, and the rows a request makes (a test
 * delivery, a redelivery, deliveries released or cancelled with their endpoint).
 */

type Queryable = Pick<DatabasePool, 'query' | 'one' | 'maybeOne' | 'any' | 'oneFirst' | 'anyFirst'>;

/** The states of the table's CHECK, in the order a delivery moves through them. */
export const DELIVERY_STATES = [
  'held',
  'pending',
  'delivering',
  'retrying',
  'delivered',
  'dead',
  'cancelled',
] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];
export const TERMINAL_DELIVERY_STATES: readonly DeliveryState[] = [
  'delivered',
  'dead',
  'cancelled',
];
/** Deliveries still owed an attempt and none in flight: what deleting their endpoint cancels. */
const CANCELLABLE_STATES: readonly DeliveryState[] = ['held', 'pending', 'retrying'];

/** A tenant endpoint's secret_origin ('none' is an inline webhook's only: never listed). */
const secretOrigin = z.enum(['generated', 'supplied', 'unknown']);
export type SecretOrigin = z.infer<typeof secretOrigin>;

/** A tenant endpoint as the API shows it: never its secret. */
export const endpointRow = z.object({
  endpoint_id: z.string(),
  tenant_id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  secret_origin: secretOrigin,
  description: z.string().nullable(),
  active: z.boolean(),
  disabled_reason: z.string().nullable(),
  consecutive_failures: z.number(),
  /** int8, as a string. */
  dead_deliveries_total: z.string(),
  last_dead_delivery_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type EndpointRow = z.infer<typeof endpointRow>;
const ENDPOINT_COLUMNS = sql.fragment`
  endpoint_id, tenant_id, url, events, secret_origin, description, active, disabled_reason,
  consecutive_failures, dead_deliveries_total, last_dead_delivery_at, created_at, updated_at`;

/** An endpoint the tenant registered and has not deleted (an inline webhook is none). */
const LIVE_ENDPOINT = sql.fragment`inline_for IS NULL AND deleted_at IS NULL`;

const NOW = sql.fragment`date_trunc('milliseconds', now())`;

export interface NewEndpoint {
  endpointId: string;
  tenantId: string;
  url: string;
  events: string[];
  secret: string;
  secretOrigin: 'generated' | 'supplied';
  description: string | null;
}

/**
 * Takes the tenant's quota row FOR UPDATE, so its endpoint creations are serialized (as its
 * workflow submits), and answers its max_webhook_endpoints and live endpoints. Call it in the
 * transaction that then inserts.
 */
export async function lockLiveEndpointCount(
  tx: Queryable,
  tenantId: string,
): Promise<{ max: number; live: number }> {
  const max = await tx.oneFirst(sql.type(z.object({ max_webhook_endpoints: z.number() }))`
    SELECT max_webhook_endpoints FROM runs.tenant_quotas
    WHERE tenant_id = ${tenantId} FOR UPDATE`);
  // A statement of its own: its snapshot is taken after the lock, so it sees the endpoint the
  // creation that held the lock before committed (one statement would count as of its start).
  const live = await tx.oneFirst(sql.type(countRow)`
    SELECT count(*)::int FROM runs.webhook_endpoints
    WHERE tenant_id = ${tenantId} AND ${LIVE_ENDPOINT}`);
  return { max, live };
}

export async function insertEndpoint(tx: Queryable, e: NewEndpoint): Promise<EndpointRow> {
  return tx.one(sql.type(endpointRow)`
    INSERT INTO runs.webhook_endpoints (endpoint_id, tenant_id, url, events, secret, secret_origin,
                                        description)
    VALUES (${e.endpointId}, ${e.tenantId}, ${e.url}, ${sql.array(e.events, 'text')}, ${e.secret},
            ${e.secretOrigin}, ${e.description})
    RETURNING ${ENDPOINT_COLUMNS}`);
}

/**
 * The tenant's live endpoint, else null (deleted, inline, another tenant's). `share` locks it
 * against a concurrent DELETE until the caller's transaction ends (a row made for it then is
 * cancelled by that DELETE, not left pending).
 */
export async function findEndpoint(
  db: Queryable,
  tenantId: string,
  endpointId: string,
  lock: 'share' | 'update' | null = null,
): Promise<EndpointRow | null> {
  const locking = { share: sql.fragment`FOR SHARE`, update: sql.fragment`FOR UPDATE` };
  return db.maybeOne(sql.type(endpointRow)`
    SELECT ${ENDPOINT_COLUMNS} FROM runs.webhook_endpoints
    WHERE endpoint_id = ${endpointId} AND tenant_id = ${tenantId} AND ${LIVE_ENDPOINT}
    ${lock === null ? sql.fragment`` : locking[lock]}`);
}

/** The tenant's live endpoints, oldest first. */
export async function listEndpoints(
  db: Queryable,
  tenantId: string,
  page: { limit: number; offset: number },
): Promise<readonly EndpointRow[]> {
  return db.any(sql.type(endpointRow)`
    SELECT ${ENDPOINT_COLUMNS} FROM runs.webhook_endpoints
    WHERE tenant_id = ${tenantId} AND ${LIVE_ENDPOINT}
    ORDER BY endpoint_id LIMIT ${page.limit} OFFSET ${page.offset}`);
}

/** What a PATCH or a rotation changes; absent fields are left as they are. */
export interface EndpointChanges {
  url?: string;
  events?: string[];
  description?: string | null;
  secret?: { value: string; origin: 'generated' | 'supplied' };
  /**
   * true: active, its disabled_reason cleared and consecutive_failures reset; false: inactive,
   * `disabled_by_tenant` unless it was already inactive (its reason is kept).
   */
  active?: boolean;
}

/** Applies `changes` to the tenant's live endpoint; null when it has none of that id. */
export async function updateEndpoint(
  tx: Queryable,
  tenantId: string,
  endpointId: string,
  changes: EndpointChanges,
): Promise<EndpointRow | null> {
  const sets = [sql.fragment`updated_at = ${NOW}`];
  if (changes.url !== undefined) sets.push(sql.fragment`url = ${changes.url}`);
  if (changes.events !== undefined)
    sets.push(sql.fragment`events = ${sql.array(changes.events, 'text')}`);
  if (changes.description !== undefined)
    sets.push(sql.fragment`description = ${changes.description}`);
  if (changes.secret !== undefined)
    sets.push(
      sql.fragment`secret = ${changes.secret.value}`,
      sql.fragment`secret_origin = ${changes.secret.origin}`,
    );
  if (changes.active === true)
    sets.push(
      sql.fragment`active = true`,
      sql.fragment`disabled_reason = NULL`,
      sql.fragment`consecutive_failures = 0`,
    );
  if (changes.active === false)
    sets.push(
      sql.fragment`active = false`,
      sql.fragment`disabled_reason = CASE WHEN active THEN 'disabled_by_tenant' ELSE disabled_reason END`,
    );
  return tx.maybeOne(sql.type(endpointRow)`
    UPDATE runs.webhook_endpoints SET ${sql.join(sets, sql.fragment`, `)}
    WHERE endpoint_id = ${endpointId} AND tenant_id = ${tenantId} AND ${LIVE_ENDPOINT}
    RETURNING ${ENDPOINT_COLUMNS}`);
}

/** A delivery to hand to the delivery starter. */
export const deliveryStart = z.object({
  deliveryId: z.string(),
  tenantId: z.string(),
  endpointId: z.string(),
});
export type DeliveryStart = z.infer<typeof deliveryStart>;

/**
 * Releases every delivery held for the endpoint while it was disabled, however long ago it was
 * made: each becomes pending, leased to this API process's dispatcher (DISPATCH_LEASE). Answers
 * them in ascending delivery_id order, the order they go out in. (released_at is no longer
 * written: one order rule holds for every first attempt. Its column goes in a later migration,
 * once no deployment of the code that writes it is left running.)
 */
export async function releaseHeldDeliveries(
  tx: Queryable,
  endpointId: string,
  taskQueue: string,
): Promise<DeliveryStart[]> {
  const rows = await tx.any(sql.type(deliveryStart)`
    UPDATE runs.webhook_deliveries SET state = 'pending', workflow_started = false,
      workflow_task_queue = ${taskQueue}, dispatch_until = ${DISPATCH_LEASE},
      next_attempt_at = NULL, updated_at = ${NOW}
    WHERE endpoint_id = ${endpointId} AND state = 'held'
    RETURNING delivery_id::text AS "deliveryId", tenant_id AS "tenantId",
              endpoint_id AS "endpointId"`);
  return [...rows].sort((a, b) => compareIds(a.deliveryId, b.deliveryId));
}

/** Two int8 ids (as text) in numeric order. */
const compareIds = (a: string, b: string): number => (BigInt(a) < BigInt(b) ? -1 : a === b ? 0 : 1);

/** Marks the tenant's live endpoint deleted; false when it has none of that id. */
export async function markEndpointDeleted(
  tx: Queryable,
  tenantId: string,
  endpointId: string,
): Promise<boolean> {
  const result = await tx.query(sql.unsafe`
    UPDATE runs.webhook_endpoints SET deleted_at = ${NOW}, updated_at = ${NOW}
    WHERE endpoint_id = ${endpointId} AND tenant_id = ${tenantId} AND ${LIVE_ENDPOINT}`);
  return result.rowCount === 1;
}

/**
 * Cancels an endpoint's deliveries that are waiting (held, pending, retrying); one in flight
 * (delivering) is left to its attempt, whose next one finds the endpoint deleted. Answers how
 * many were cancelled.
 */
export async function cancelWaitingDeliveries(tx: Queryable, endpointId: string): Promise<number> {
  const result = await tx.query(sql.unsafe`
    UPDATE runs.webhook_deliveries
    SET state = 'cancelled', finished_at = ${NOW}, updated_at = ${NOW}, next_attempt_at = NULL
    WHERE endpoint_id = ${endpointId}
      AND state = ANY(${sql.array([...CANCELLABLE_STATES], 'text')})`);
  return result.rowCount;
}

export interface NewDelivery {
  tenantId: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  envelope: Record<string, unknown>;
  test: boolean;
  /** The runs queue its delivery workflow starts on (this deployment's). */
  taskQueue: string;
}

/** A pending delivery of no run or workflow (a test); answers its delivery_id. */
export async function insertDelivery(tx: Queryable, d: NewDelivery): Promise<string> {
  return tx.oneFirst(sql.type(z.object({ delivery_id: z.string() }))`
    INSERT INTO runs.webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, envelope,
                                         test, state, workflow_task_queue, dispatch_until)
    VALUES (${d.tenantId}, ${d.endpointId}, ${d.eventId}, ${d.eventType},
            ${sql.jsonb(d.envelope as never)}, ${d.test}, 'pending', ${d.taskQueue},
            ${DISPATCH_LEASE})
    RETURNING delivery_id::text`);
}

/**
 * A new delivery of each original's event to the same subscription (same event_id, envelope,
 * run and workflow), `redelivery_of` its original, made in the originals' order; answered in
 * that (ascending delivery_id) order.
 */
export async function insertRedeliveries(
  tx: Queryable,
  originalIds: string[],
  state: 'pending' | 'held',
  taskQueue: string,
): Promise<DeliveryStart[]> {
  const made = await tx.any(sql.type(deliveryStart)`
    INSERT INTO runs.webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, track_id,
                                         workflow_id, envelope, truncated, test, state, redelivery_of,
                                         workflow_task_queue, dispatch_until)
    SELECT d.tenant_id, d.endpoint_id, d.event_id, d.event_type, d.track_id, d.workflow_id,
           d.envelope, d.truncated, d.test, ${state}, d.delivery_id, ${taskQueue}, ${DISPATCH_LEASE}
    FROM unnest(${sql.array(originalIds, 'int8')}::int8[]) WITH ORDINALITY AS o(id, position)
    JOIN runs.webhook_deliveries d ON d.delivery_id = o.id
    ORDER BY o.position
    RETURNING delivery_id::text AS "deliveryId", tenant_id AS "tenantId",
              endpoint_id AS "endpointId"`);
  return [...made].sort((x, y) => compareIds(x.deliveryId, y.deliveryId));
}

/** The events a recover re-sends: made in [since, until), at most `limit` of them. */
export interface RecoverWindow {
  since: string;
  until: string;
  limit: number;
}

/**
 * A new delivery (redelivery_of its newest) of each event of the endpoint made in the window
 * that it never received: every delivery of it ended dead (or cancelled), none delivered or
 * still under way. Test deliveries are no events. Pending and leased (DISPATCH_LEASE), made in
 * the order of the events' first deliveries; answered in that order, with whether more events
 * past `limit` are left for another call.
 */
export async function insertRecoveries(
  tx: Queryable,
  endpointId: string,
  window: RecoverWindow,
  taskQueue: string,
): Promise<{ made: DeliveryStart[]; more: boolean }> {
  const newest = await tx.anyFirst(sql.type(z.object({ newest_id: z.string() }))`
    WITH mine AS (
      SELECT delivery_id, event_id, redelivery_of, state, test, created_at
      FROM runs.webhook_deliveries
      WHERE endpoint_id = ${endpointId} AND created_at >= ${window.since}::timestamptz),
    unreceived AS (
      SELECT min(delivery_id) FILTER (WHERE redelivery_of IS NULL) AS first_id,
             max(delivery_id) AS newest_id
      FROM mine WHERE NOT test
      GROUP BY event_id HAVING bool_and(state IN ('dead', 'cancelled')))
    SELECT u.newest_id::text FROM unreceived u JOIN mine f ON f.delivery_id = u.first_id
    WHERE f.created_at < ${window.until}::timestamptz
    ORDER BY u.first_id LIMIT ${window.limit + 1}`);
  const more = newest.length > window.limit;
  const resent = newest.slice(0, window.limit);
  if (resent.length === 0) return { made: [], more };
  return { made: await insertRedeliveries(tx, resent, 'pending', taskQueue), more };
}

/** A delivery as the API shows it, with what its subscription is. */
export const deliveryRow = z.object({
  /** int8, as text. */
  delivery_id: z.string(),
  tenant_id: z.string(),
  endpoint_id: z.string(),
  /** Its subscription is an inline webhook of a run or workflow. */
  inline: z.boolean(),
  endpoint_active: z.boolean(),
  endpoint_deleted: z.boolean(),
  event_id: z.string(),
  event_type: z.string(),
  track_id: z.string().nullable(),
  workflow_id: z.string().nullable(),
  state: z.enum(DELIVERY_STATES),
  attempts: z.number(),
  next_attempt_at: z.string().nullable(),
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  test: z.boolean(),
  truncated: z.boolean(),
  /** int8, as text. */
  redelivery_of: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  finished_at: z.string().nullable(),
});
export type DeliveryRow = z.infer<typeof deliveryRow>;
const DELIVERY_COLUMNS = sql.fragment`
  d.delivery_id::text, d.tenant_id, d.endpoint_id, e.inline_for IS NOT NULL AS inline,
  e.active AS endpoint_active, e.deleted_at IS NOT NULL AS endpoint_deleted, d.event_id,
  d.event_type, d.track_id, d.workflow_id, d.state, d.attempts, d.next_attempt_at,
  d.last_status_code, d.last_error, d.test, d.truncated, d.redelivery_of::text, d.created_at,
  d.updated_at, d.finished_at`;

/**
 * The tenant's delivery, else null. `lockEndpoint` takes its endpoint FOR SHARE (as findEndpoint
 * does), for a redelivery made in the same transaction.
 */
export async function findDelivery(
  db: Queryable,
  tenantId: string,
  deliveryId: string,
  lockEndpoint = false,
): Promise<DeliveryRow | null> {
  return db.maybeOne(sql.type(deliveryRow)`
    SELECT ${DELIVERY_COLUMNS}
    FROM runs.webhook_deliveries d JOIN runs.webhook_endpoints e USING (endpoint_id)
    WHERE d.delivery_id = ${deliveryId}::bigint AND d.tenant_id = ${tenantId}
    ${lockEndpoint ? sql.fragment`FOR SHARE OF e` : sql.fragment``}`);
}

/** Whose deliveries a list reads: one endpoint's, one run's, one workflow's. */
export type DeliveryScope = { endpointId: string } | { trackId: string } | { workflowId: string };

export interface DeliveryFilter {
  states: DeliveryState[] | null;
  /** A delivery_id: only later ones (exclusive); '0' from the first. */
  since: string;
  limit: number;
}

const scopeCondition = (scope: DeliveryScope) =>
  'endpointId' in scope
    ? sql.fragment`d.endpoint_id = ${scope.endpointId}`
    : 'trackId' in scope
      ? sql.fragment`d.track_id = ${scope.trackId}`
      : sql.fragment`d.workflow_id = ${scope.workflowId}`;

/** The tenant's deliveries of one scope after `since`, ascending delivery_id. */
export async function listDeliveries(
  db: Queryable,
  tenantId: string,
  scope: DeliveryScope,
  filter: DeliveryFilter,
): Promise<readonly DeliveryRow[]> {
  const conditions = [
    scopeCondition(scope),
    sql.fragment`d.tenant_id = ${tenantId}`,
    sql.fragment`d.delivery_id > ${filter.since}::bigint`,
  ];
  if (filter.states)
    conditions.push(sql.fragment`d.state = ANY(${sql.array(filter.states, 'text')})`);
  return db.any(sql.type(deliveryRow)`
    SELECT ${DELIVERY_COLUMNS}
    FROM runs.webhook_deliveries d JOIN runs.webhook_endpoints e USING (endpoint_id)
    WHERE ${sql.join(conditions, sql.fragment` AND `)}
    ORDER BY d.delivery_id LIMIT ${filter.limit}`);
}

export const attemptRow = z.object({
  attempt: z.number(),
  started_at: z.string(),
  finished_at: z.string(),
  status_code: z.number().nullable(),
  error: z.string().nullable(),
  outcome: z.enum(['delivered', 'retry', 'dead']),
});
export type AttemptRow = z.infer<typeof attemptRow>;

/** A delivery's attempts, first first. */
export async function listAttempts(
  db: Queryable,
  deliveryId: string,
): Promise<readonly AttemptRow[]> {
  return db.any(sql.type(attemptRow)`
    SELECT attempt, started_at, finished_at, status_code, error, outcome
    FROM runs.webhook_attempts WHERE delivery_id = ${deliveryId}::bigint
    ORDER BY attempt`);
}

/** The inline webhook of one run or workflow: a subscription scoped to it alone. */
export interface InlineWebhookRow {
  endpointId: string;
  url: string;
  events: string[];
  /** null: deliveries go unsigned (signature header `none`). */
  secret: string | null;
}

/**
 * The INSERT of an inline webhook's row as a SELECT without FROM: a statement that stores it with
 * its run appends `FROM run` (inserted only if the run was); alone it inserts one row.
 */
export function inlineWebhookInsert(tenantId: string, inlineFor: string, hook: InlineWebhookRow) {
  return sql.fragment`
    INSERT INTO runs.webhook_endpoints (endpoint_id, tenant_id, inline_for, url, events, secret,
                                        secret_origin)
    SELECT ${hook.endpointId}, ${tenantId}, ${inlineFor}, ${hook.url},
           ${sql.array(hook.events, 'text')}, ${hook.secret},
           ${hook.secret === null ? 'none' : 'supplied'}`;
}

/**
 * A delivery the starter's sweep takes up: left delivering by a process that died mid-attempt,
 * or left retrying by one that died before handing it to its workflow.
 */
const sweptDeliveryRow = z.object({
  /** int8, as text. */
  deliveryId: z.string(),
  tenantId: z.string(),
  endpointId: z.string(),
  eventType: z.string(),
  state: z.enum(['delivering', 'retrying']),
  attempts: z.number(),
  /** ISO-8601 UTC, to the millisecond. */
  nextAttemptAt: z.string().nullable(),
});
export type SweptDeliveryRow = z.infer<typeof sweptDeliveryRow>;

/**
 * Deliveries of `queue` whose workflow is not started and whose process is presumed gone: one
 * delivering once its attempt would have timed out (`attemptSeconds`), one retrying at once;
 * either only `graceSeconds` after its last change. Oldest first, none of `skip`.
 */
export async function dueDeliveryStarts(
  db: Queryable,
  w: { queue: string; attemptSeconds: number; graceSeconds: number; limit: number; skip: string[] },
): Promise<SweptDeliveryRow[]> {
  const rows = await db.any(sql.type(sweptDeliveryRow)`
    SELECT delivery_id::text AS "deliveryId", tenant_id AS "tenantId", endpoint_id AS "endpointId",
           event_type AS "eventType", state, attempts,
           to_char(next_attempt_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "nextAttemptAt"
    FROM runs.webhook_deliveries
    WHERE NOT workflow_started AND state IN ('delivering', 'retrying')
      AND workflow_task_queue = ${w.queue}
      AND CASE state
            WHEN 'delivering' THEN updated_at + make_interval(secs => ${w.attemptSeconds})
            ELSE updated_at
          END < now() - make_interval(secs => ${w.graceSeconds})
      AND NOT (delivery_id::text = ANY(${sql.array(w.skip, 'text')}))
    ORDER BY delivery_id LIMIT ${w.limit}`);
  return [...rows];
}

/** Temporal has these deliveries' workflows (ids: int8 as text). */
export async function markDeliveryWorkflowsStarted(db: Queryable, ids: string[]): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE runs.webhook_deliveries SET workflow_started = true
    WHERE delivery_id = ANY(${sql.array(ids, 'int8')})`);
}

/** A delivery's event type; null when there is no such delivery. */
export async function findDeliveryEventType(
  db: Pick<DatabasePool, 'maybeOneFirst'>,
  deliveryId: string,
): Promise<string | null> {
  return db.maybeOneFirst(sql.type(z.object({ event_type: z.string() }))`
    SELECT event_type FROM runs.webhook_deliveries WHERE delivery_id = ${deliveryId}::int8`);
}
