import { z } from 'zod';
import { ulid } from '../ids';
import { sql, type DatabasePool, type Tx } from '../pool';

/**
 * The delivery engine's Postgres side for the runs service (migration runs/0008): the events to
 * publish, the subscriptions they match, the deliveries they make, and each attempt's record
 * with what it means for its endpoint (failures, auto-disable, notices).
 */

/** What a run event's envelope says of its run (services/runs/webhooks/envelopes.ts). */
export const runSnapshot = z.object({
  track_id: z.string(),
  name: z.string().nullable(),
  tags: z.array(z.string()),
  image: z.string(),
  env: z.record(z.string()),
  submitted_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  workflow_id: z.string().nullable(),
  node_ref: z.string().nullable(),
  exit_code: z.number().nullable(),
  /** int8, as a string. */
  stdout_bytes: z.string(),
  /** int8, as a string. */
  stderr_bytes: z.string(),
  result_summary: z.string().nullable(),
});
export type RunSnapshot = z.infer<typeof runSnapshot>;

/** A committed event not yet published, from any of the three outboxes. */
export const unpublishedEvent = z.object({
  source: z.enum(['run', 'workflow', 'notice']),
  /** run_events.event_id and webhook_notices.event_id; workflow_events.id for a workflow's. */
  key: z.string(),
  event_id: z.string(),
  tenant_id: z.string(),
  occurred_at: z.string(),
  event_type: z.string().nullable(),
  kind: z.enum(['workflow', 'node']).nullable(),
  from_state: z.string().nullable(),
  to_state: z.string().nullable(),
  track_id: z.string().nullable(),
  workflow_id: z.string().nullable(),
  node_ref: z.string().nullable(),
  resource_type: z.string().nullable(),
  resource_id: z.string().nullable(),
  data: z.record(z.unknown()).nullable(),
});
export type UnpublishedEvent = z.infer<typeof unpublishedEvent>;

/**
 * Claims up to `limit` unpublished events of each outbox, oldest first, locked so that two
 * publishers never take the same event (SKIP LOCKED).
 */
export async function claimUnpublished(
  tx: Tx,
  limit: number,
  queue: string,
): Promise<UnpublishedEvent[]> {
  // Only this deployment's events (its runs queue; NULL: rows that name none): deployments that
  // share the database (a test's own prefix) never publish, nor start, each other's.
  const ours = (column: ReturnType<typeof sql.identifier>) =>
    sql.fragment`(${column} IS NULL OR ${column} = ${queue})`;
  const runs = await tx.any(sql.type(unpublishedEvent)`
    SELECT 'run' AS source, e.event_id AS key, e.event_id, e.tenant_id, e.ts AS occurred_at,
           e.event_type, NULL AS kind, e.from_state, e.to_state, e.track_id, r.workflow_id,
           r.node_ref, NULL AS resource_type, NULL AS resource_id, NULL::jsonb AS data
    FROM runs.run_events e JOIN runs.runs r USING (track_id)
    WHERE e.published_at IS NULL AND ${ours(sql.identifier(['r', 'workflow_task_queue']))}
    ORDER BY e.event_id LIMIT ${limit} FOR UPDATE OF e SKIP LOCKED`);
  const workflows = await tx.any(sql.type(unpublishedEvent)`
    SELECT 'workflow' AS source, e.id::text AS key, e.event_id, e.tenant_id,
           e.created_at AS occurred_at, NULL AS event_type, e.kind, e.from_state, e.to_state,
           NULL AS track_id, e.workflow_id, e.node_ref, NULL AS resource_type,
           NULL AS resource_id, NULL::jsonb AS data
    FROM runs.workflow_events e JOIN runs.workflows w USING (workflow_id)
    WHERE e.published_at IS NULL AND ${ours(sql.identifier(['w', 'workflow_task_queue']))}
    ORDER BY e.id LIMIT ${limit} FOR UPDATE OF e SKIP LOCKED`);
  const notices = await tx.any(sql.type(unpublishedEvent)`
    SELECT 'notice' AS source, event_id AS key, event_id, tenant_id, created_at AS occurred_at,
           event_type, NULL AS kind, NULL AS from_state, NULL AS to_state, NULL AS track_id,
           NULL AS workflow_id, NULL AS node_ref, resource_type, resource_id, data
    FROM runs.webhook_notices
    WHERE published_at IS NULL AND ${ours(sql.identifier(['workflow_task_queue']))}
    ORDER BY event_id LIMIT ${limit} FOR UPDATE SKIP LOCKED`);
  return [...runs, ...workflows, ...notices];
}

export async function markPublished(tx: Tx, events: UnpublishedEvent[]): Promise<void> {
  const keys = (source: UnpublishedEvent['source']) =>
    sql.array(
      events.filter((e) => e.source === source).map((e) => e.key),
      'text',
    );
  await tx.query(sql.unsafe`
    UPDATE runs.run_events SET published_at = now() WHERE event_id = ANY(${keys('run')})`);
  await tx.query(sql.unsafe`
    UPDATE runs.workflow_events SET published_at = now() WHERE id::text = ANY(${keys('workflow')})`);
  await tx.query(sql.unsafe`
    UPDATE runs.webhook_notices SET published_at = now() WHERE event_id = ANY(${keys('notice')})`);
}

export const subscription = z.object({
  endpoint_id: z.string(),
  tenant_id: z.string(),
  inline_for: z.string().nullable(),
  events: z.array(z.string()),
  active: z.boolean(),
});
export type Subscription = z.infer<typeof subscription>;

/**
 * The live subscriptions of these tenants, and the inline ones of these runs and workflows;
 * locked until the publish commits, so an endpoint re-enabled meanwhile releases every delivery
 * held for it (its PATCH waits for them).
 */
export async function subscriptionsFor(
  tx: Tx,
  tenantIds: string[],
  resourceIds: string[],
): Promise<readonly Subscription[]> {
  return tx.any(sql.type(subscription)`
    SELECT endpoint_id, tenant_id, inline_for, events, active FROM runs.webhook_endpoints
    WHERE deleted_at IS NULL
      AND ((inline_for IS NULL AND tenant_id = ANY(${sql.array(tenantIds, 'text')}))
        OR inline_for = ANY(${sql.array(resourceIds, 'text')}))
    FOR SHARE`);
}

const payloadLimitRow = z.object({ tenant_id: z.string(), max: z.number() });

/** Each tenant's max_webhook_payload_bytes. */
export async function payloadLimits(tx: Tx, tenantIds: string[]): Promise<Map<string, number>> {
  const rows = await tx.any(sql.type(payloadLimitRow)`
    SELECT tenant_id, max_webhook_payload_bytes AS max FROM runs.tenant_quotas
    WHERE tenant_id = ANY(${sql.array(tenantIds, 'text')})`);
  return new Map(rows.map((r) => [r.tenant_id, r.max]));
}

export async function runSnapshots(tx: Tx, trackIds: string[]): Promise<Map<string, RunSnapshot>> {
  const rows = await tx.any(sql.type(runSnapshot)`
    SELECT track_id, name, tags, image, env, submitted_at, started_at, finished_at, workflow_id,
           node_ref, exit_code, stdout_bytes, stderr_bytes, result_summary
    FROM runs.runs WHERE track_id = ANY(${sql.array(trackIds, 'text')})`);
  return new Map(rows.map((r) => [r.track_id, r]));
}

export const workflowSnapshot = z.object({
  workflow_id: z.string(),
  name: z.string().nullable(),
  failure_policy: z.string(),
  tags: z.array(z.string()),
  /** jsonb_agg of the nodes, in position order. */
  nodes: z.array(
    z.object({
      ref: z.string(),
      type: z.string(),
      state: z.string(),
      attempt: z.number(),
      current_track_id: z.string().nullable(),
      exit_code: z.number().nullable(),
      output: z.unknown(),
    }),
  ),
});
export type WorkflowSnapshot = z.infer<typeof workflowSnapshot>;

export async function workflowSnapshots(
  tx: Tx,
  workflowIds: string[],
): Promise<Map<string, WorkflowSnapshot>> {
  const rows = await tx.any(sql.type(workflowSnapshot)`
    SELECT w.workflow_id, w.name, w.failure_policy, w.tags,
           coalesce(jsonb_agg(jsonb_build_object('ref', n.ref, 'type', n.type, 'state', n.state,
             'attempt', n.attempt, 'current_track_id', n.current_track_id,
             'exit_code', n.exit_code, 'output', n.output) ORDER BY n.position), '[]') AS nodes
    FROM runs.workflows w JOIN runs.workflow_nodes n USING (workflow_id)
    WHERE w.workflow_id = ANY(${sql.array(workflowIds, 'text')})
    GROUP BY w.workflow_id`);
  return new Map(rows.map((r) => [r.workflow_id, r]));
}

export interface NewDelivery {
  tenant_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  track_id: string | null;
  workflow_id: string | null;
  envelope: unknown;
  truncated: boolean;
  held: boolean;
  /** The runs queue its delivery workflow starts on (the publishing deployment's). */
  workflow_task_queue: string;
}

const insertedDelivery = z.object({
  deliveryId: z.string(),
  tenantId: z.string(),
  endpointId: z.string(),
  eventType: z.string(),
  state: z.string(),
});

/**
 * Inserts deliveries, one per (subscription, event): a second publish of the same event (a
 * publisher that died after inserting, before its commit) adds none. Answers the pending ones.
 */
export async function insertDeliveries(
  tx: Tx,
  deliveries: NewDelivery[],
): Promise<{ deliveryId: string; tenantId: string; endpointId: string; eventType: string }[]> {
  if (deliveries.length === 0) return [];
  const column = <K extends keyof NewDelivery>(key: K) => deliveries.map((d) => d[key]);
  const inserted = await tx.any(sql.type(insertedDelivery)`
    INSERT INTO runs.webhook_deliveries (tenant_id, endpoint_id, event_id, event_type, track_id,
                                        workflow_id, envelope, truncated, state,
                                        workflow_task_queue, dispatch_until)
    SELECT *, ${DISPATCH_LEASE} FROM unnest(${sql.array(column('tenant_id'), 'text')}::text[],
                         ${sql.array(column('endpoint_id'), 'text')}::text[],
                         ${sql.array(column('event_id'), 'text')}::text[],
                         ${sql.array(column('event_type'), 'text')}::text[],
                         ${sql.array(column('track_id') as string[], 'text')}::text[],
                         ${sql.array(column('workflow_id') as string[], 'text')}::text[],
                         ${sql.array(
                           deliveries.map((d) => JSON.stringify(d.envelope)),
                           'jsonb',
                         )}::jsonb[],
                         ${sql.array(column('truncated'), 'bool')}::bool[],
                         ${sql.array(
                           deliveries.map((d) => (d.held ? 'held' : 'pending')),
                           'text',
                         )}::text[],
                         ${sql.array(column('workflow_task_queue'), 'text')}::text[])
    ON CONFLICT (endpoint_id, event_id) WHERE redelivery_of IS NULL DO NOTHING
    RETURNING delivery_id::text AS "deliveryId", tenant_id AS "tenantId",
              endpoint_id AS "endpointId", event_type AS "eventType", state`);
  return inserted.filter((d) => d.state === 'pending');
}

/** What an attempt sends: the delivery, its envelope and where it goes, signed how. */
export const attemptTarget = z.object({
  delivery_id: z.string(),
  tenant_id: z.string(),
  endpoint_id: z.string(),
  inline: z.boolean(),
  event_id: z.string(),
  event_type: z.string(),
  envelope: z.record(z.unknown()),
  url: z.string(),
  secret: z.string().nullable(),
  secret_origin: z.enum(['generated', 'supplied', 'unknown', 'none']),
});
export type AttemptTarget = z.infer<typeof attemptTarget>;

/**
 * How long a new, released or recovered delivery is its API process's to attempt first (its
 * lease, dispatch_until), renewed while it waits in that process's queue
 * (services/runs/webhooks/dispatcher.ts); a pending row whose lease ran out is adopted by another
 * process's dispatcher (adoptLapsedDeliveries), so two never both take one. Their clock is the
 * database's.
 */
export const DISPATCH_WINDOW_SECONDS = 8;
/** The end of a lease taken or renewed now. */
export const DISPATCH_LEASE = sql.fragment`now() + make_interval(secs => ${DISPATCH_WINDOW_SECONDS})`;

/**
 * Per-endpoint order: a delivery's first attempt waits while an earlier delivery of its endpoint
 * is still waiting for, or making, its own first attempt (a retry waits for nobody). One rule for
 * the dispatcher's attempts and the workflows'.
 */
const NO_EARLIER_FIRST_ATTEMPT = sql.fragment`NOT EXISTS (
  SELECT 1 FROM runs.webhook_deliveries p
  WHERE p.endpoint_id = d.endpoint_id AND p.delivery_id < d.delivery_id
    AND (p.state = 'pending' OR (p.state = 'delivering' AND p.attempts = 1)))`;

/** Marks the delivery `delivering` for `attempt` where `condition` holds; answers what to send. */
async function begin(
  pool: DatabasePool,
  deliveryId: string,
  attempt: number,
  condition: ReturnType<typeof sql.fragment>,
): Promise<AttemptTarget | null> {
  return pool.maybeOne(sql.type(attemptTarget)`
    WITH begun AS (
      UPDATE runs.webhook_deliveries d SET state = 'delivering', attempts = ${attempt},
        next_attempt_at = NULL, updated_at = date_trunc('milliseconds', now())
      FROM runs.webhook_endpoints e
      WHERE d.delivery_id = ${deliveryId}::bigint AND e.endpoint_id = d.endpoint_id
        AND e.deleted_at IS NULL AND ${condition}
      RETURNING d.*)
    SELECT b.delivery_id::text, b.tenant_id, b.endpoint_id, e.inline_for IS NOT NULL AS inline,
           b.event_id, b.event_type, b.envelope, e.url, e.secret, e.secret_origin
    FROM begun b JOIN runs.webhook_endpoints e USING (endpoint_id)`);
}

/** Whether the delivery is in `condition` (after `begin` found it not to be ready). */
const holds = (
  pool: DatabasePool,
  deliveryId: string,
  condition: ReturnType<typeof sql.fragment>,
) =>
  pool.exists(sql.unsafe`
    SELECT 1 FROM runs.webhook_deliveries d WHERE d.delivery_id = ${deliveryId}::bigint AND ${condition}`);

/**
 * An attempt of a delivery's workflow: marks it `delivering` and answers what to send; null when
 * there is nothing to attempt (cancelled, already ended, its endpoint deleted); 'wait' for a
 * first attempt while an earlier delivery of its endpoint waits for its own. A retried activity
 * finds its own attempt in flight and sends again (at least once).
 */
export async function beginAttempt(
  pool: DatabasePool,
  deliveryId: string,
  attempt: number,
): Promise<AttemptTarget | 'wait' | null> {
  const attemptable = sql.fragment`(d.state IN ('pending', 'retrying')
    OR (d.state = 'delivering' AND d.attempts = ${attempt}))`;
  if (attempt > 1) return begin(pool, deliveryId, attempt, attemptable);
  const begun = await begin(
    pool,
    deliveryId,
    1,
    sql.fragment`${attemptable} AND (d.state = 'delivering' OR ${NO_EARLIER_FIRST_ATTEMPT})`,
  );
  if (begun !== null) return begun;
  return (await holds(pool, deliveryId, sql.fragment`d.state = 'pending'`)) ? 'wait' : null;
}

/**
 * The first attempt of a delivery its API process holds the lease of
 * (services/runs/webhooks/dispatcher.ts), with no workflow: pending, never started as a workflow, its
 * lease running, and no earlier first attempt of its endpoint outstanding. 'wait': there is one
 * (per-endpoint order); null: the delivery is not this dispatcher's to attempt any more.
 */
export async function beginDispatchedAttempt(
  pool: DatabasePool,
  deliveryId: string,
): Promise<AttemptTarget | 'wait' | null> {
  const leased = sql.fragment`d.state = 'pending' AND NOT d.workflow_started
    AND d.dispatch_until > now()`;
  const begun = await begin(
    pool,
    deliveryId,
    1,
    sql.fragment`${leased} AND ${NO_EARLIER_FIRST_ATTEMPT}`,
  );
  if (begun !== null) return begun;
  return (await holds(pool, deliveryId, leased)) ? 'wait' : null;
}

/**
 * Renews the leases of the deliveries waiting in a dispatcher's queue that run out within half
 * a window; one that has already run out may be another process's by now, and stays as it is.
 */
export async function renewDispatchLeases(
  pool: DatabasePool,
  deliveryIds: string[],
): Promise<void> {
  if (deliveryIds.length === 0) return;
  await pool.query(sql.unsafe`
    UPDATE runs.webhook_deliveries SET dispatch_until = ${DISPATCH_LEASE}
    WHERE delivery_id = ANY(${sql.array(deliveryIds, 'int8')})
      AND state = 'pending' AND NOT workflow_started AND dispatch_until > now()
      AND dispatch_until < now() + make_interval(secs => ${DISPATCH_WINDOW_SECONDS / 2})`);
}

/** A lease is free to take this long after it ran out: a margin for a renewal that crosses. */
const LEASE_GRACE_SECONDS = 2;

/** A pending delivery a dispatcher adopted: its own lease now, and where it goes. */
export const adoptedDelivery = z.object({
  deliveryId: z.string(),
  tenantId: z.string(),
  endpointId: z.string(),
  eventType: z.string(),
});
export type AdoptedDelivery = z.infer<typeof adoptedDelivery>;

/**
 * Takes the lease of up to `limit` pending deliveries of this deployment that no process holds
 * any more (theirs died, or dropped them), oldest first: a first attempt is always a
 * dispatcher's, in order, never a workflow's. Two processes never adopt one (SKIP LOCKED, then
 * the lease).
 */
export async function adoptLapsedDeliveries(
  pool: DatabasePool,
  queue: string,
  limit: number,
): Promise<readonly AdoptedDelivery[]> {
  return pool.any(sql.type(adoptedDelivery)`
    UPDATE runs.webhook_deliveries d SET dispatch_until = ${DISPATCH_LEASE}
    FROM (
      SELECT delivery_id FROM runs.webhook_deliveries
      WHERE NOT workflow_started AND state = 'pending' AND workflow_task_queue = ${queue}
        AND coalesce(dispatch_until, '-infinity')
              < now() - make_interval(secs => ${LEASE_GRACE_SECONDS})
      ORDER BY delivery_id LIMIT ${limit} FOR UPDATE SKIP LOCKED) lapsed
    WHERE d.delivery_id = lapsed.delivery_id
    RETURNING d.delivery_id::text AS "deliveryId", d.tenant_id AS "tenantId",
              d.endpoint_id AS "endpointId", d.event_type AS "eventType"`);
}

export interface AttemptRecord {
  deliveryId: string;
  attempt: number;
  startedAt: string;
  outcome: 'delivered' | 'retry' | 'dead';
  statusCode: number | null;
  error: string | null;
  /** When the next attempt is due (a retry); null otherwise. */
  nextAttemptAt: string | null;
  /** Whether its death raises tenant notices (a notice's own does not: no feeding loop). */
  raisesNotices: boolean;
}

/** Auto-disable: this many dead deliveries in 24 hours, with no success in them. */
export const AUTO_DISABLE_DEAD_24H = 20;
/** webhook.endpoint_degraded when the 24-hour dead count reaches this. */
export const DEGRADED_DEAD_24H = 5;

/** A delivery as its attempt's record left it. */
const deliveryRecorded = z.object({
  delivery_id: z.string(),
  tenant_id: z.string(),
  endpoint_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  test: z.boolean(),
  /** Its deployment's runs queue: the notices it raises are that deployment's to publish. */
  workflow_task_queue: z.string(),
});
type DeliveryRecorded = z.infer<typeof deliveryRecorded>;

/**
 * Records an attempt and its delivery's new state in one transaction, with what it means for the
 * endpoint: a success resets consecutive_failures; a failure counts one; a dead delivery counts
 * in dead_deliveries_total, may disable the endpoint (AUTO_DISABLE_DEAD_24H with no success in
 * 24 hours) and raises the notices (tenant.delivery_dead; webhook.endpoint_degraded at the 5th).
 */
export async function recordAttempt(pool: DatabasePool, a: AttemptRecord): Promise<void> {
  await pool.transaction(async (tx) => {
    const delivery = await tx.maybeOne(sql.type(deliveryRecorded)`
      UPDATE runs.webhook_deliveries SET
        state = ${a.outcome === 'retry' ? 'retrying' : a.outcome},
        last_status_code = ${a.statusCode}, last_error = ${a.error},
        next_attempt_at = ${a.nextAttemptAt}::timestamptz,
        finished_at = CASE WHEN ${a.outcome !== 'retry'} THEN date_trunc('milliseconds', now()) END,
        updated_at = date_trunc('milliseconds', now())
      WHERE delivery_id = ${a.deliveryId}::bigint AND state = 'delivering'
      RETURNING delivery_id::text, tenant_id, endpoint_id, event_id, event_type, test,
                workflow_task_queue`);
    if (!delivery) return; // cancelled meanwhile, or this attempt already recorded
    await tx.query(sql.unsafe`
      INSERT INTO runs.webhook_attempts (delivery_id, attempt, started_at, finished_at,
                                         status_code, error, outcome)
      VALUES (${a.deliveryId}::bigint, ${a.attempt}, ${a.startedAt}::timestamptz,
              date_trunc('milliseconds', clock_timestamp()), ${a.statusCode}, ${a.error}, ${a.outcome})
      ON CONFLICT (delivery_id, attempt) DO NOTHING`);
    await tx.query(sql.unsafe`
      UPDATE runs.webhook_endpoints SET
        consecutive_failures = CASE WHEN ${a.outcome === 'delivered'} THEN 0
                                    ELSE consecutive_failures + 1 END,
        dead_deliveries_total = dead_deliveries_total + ${a.outcome === 'dead' ? 1 : 0},
        last_dead_delivery_at = CASE WHEN ${a.outcome === 'dead'}
                                     THEN date_trunc('milliseconds', now()) ELSE last_dead_delivery_at END
      WHERE endpoint_id = ${delivery.endpoint_id}`);
    if (a.outcome === 'dead') await afterDead(tx, delivery, a);
  });
}

const deadWindowRow = z.object({ dead: z.number(), delivered: z.number() });

async function afterDead(tx: Tx, delivery: DeliveryRecorded, a: AttemptRecord): Promise<void> {
  const window = await tx.one(sql.type(deadWindowRow)`
    SELECT count(*) FILTER (WHERE state = 'dead')::int AS dead,
           count(*) FILTER (WHERE state = 'delivered')::int AS delivered
    FROM runs.webhook_deliveries
    WHERE endpoint_id = ${delivery.endpoint_id} AND state IN ('dead', 'delivered')
      AND finished_at > now() - interval '24 hours'`);
  if (window.dead >= AUTO_DISABLE_DEAD_24H && window.delivered === 0)
    await tx.query(sql.unsafe`
      UPDATE runs.webhook_endpoints SET active = false,
        disabled_reason = 'dead_without_success_24h', updated_at = date_trunc('milliseconds', now())
      WHERE endpoint_id = ${delivery.endpoint_id} AND active`);
  if (!a.raisesNotices) return;
  const endpoint = { type: 'webhook_endpoint', id: delivery.endpoint_id };
  await insertNotice(tx, delivery, 'tenant.delivery_dead', endpoint, {
    delivery_id: Number(delivery.delivery_id),
    endpoint_id: delivery.endpoint_id,
    event_id: delivery.event_id,
    event_type: delivery.event_type,
    attempts: a.attempt,
    last_status_code: a.statusCode,
    last_error: a.error,
  });
  if (window.dead === DEGRADED_DEAD_24H)
    await insertNotice(tx, delivery, 'webhook.endpoint_degraded', endpoint, {
      endpoint_id: delivery.endpoint_id,
      dead_deliveries_24h: window.dead,
    });
}

async function insertNotice(
  tx: Tx,
  delivery: DeliveryRecorded,
  eventType: string,
  resource: { type: string; id: string },
  data: Record<string, unknown>,
): Promise<void> {
  await tx.query(sql.unsafe`
    INSERT INTO runs.webhook_notices (event_id, tenant_id, event_type, resource_type, resource_id,
                                      data, workflow_task_queue)
    VALUES (${ulid()}, ${delivery.tenant_id}, ${eventType}, ${resource.type}, ${resource.id},
            ${sql.jsonb(data as never)}, ${delivery.workflow_task_queue})`);
}
