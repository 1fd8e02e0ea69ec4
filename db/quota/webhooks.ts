import { z } from 'zod';
import { existsRow, sql } from '../pool';
import type { Queryable } from './queryable';

/** Webhook endpoints of the quota service and their deliveries (migration quota/0004). */

export const webhookEndpointRow = z.object({
  id: z.string(),
  url: z.string(),
  description: z.string(),
  event_types: z.array(z.string()),
  enabled: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type WebhookEndpointRow = z.infer<typeof webhookEndpointRow>;

const ENDPOINT = sql.fragment`id, url, description, event_types, enabled, created_at, updated_at`;

/** An endpoint with its secret (`${ENDPOINT}, secret`). */
const endpointWithSecretRow = webhookEndpointRow.extend({ secret: z.string() });

/** The delivery statuses (the table's CHECK). */
export const DELIVERY_STATUSES = [
  'pending',
  'delivering',
  'retrying',
  'delivered',
  'dead',
  'cancelled',
] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export const deliveryRow = z.object({
  id: z.string(),
  endpoint_id: z.string(),
  alert_event_id: z.string().nullable(),
  event_type: z.string(),
  attempt_count: z.number(),
  status: z.enum(DELIVERY_STATUSES),
  last_status_code: z.number().nullable(),
  last_error: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
  created_at: z.string(),
});
export type DeliveryRow = z.infer<typeof deliveryRow>;

const DELIVERY = sql.fragment`id, endpoint_id, alert_event_id, event_type, attempt_count, status,
  last_status_code, last_error, next_attempt_at, created_at`;

export interface NewEndpoint {
  id: string;
  tenantId: string;
  url: string;
  description: string;
  eventTypes: string[];
  enabled: boolean;
  secret: string;
}

export async function insertEndpoint(db: Queryable, e: NewEndpoint): Promise<WebhookEndpointRow> {
  return db.one(sql.type(webhookEndpointRow)`
    INSERT INTO quota.webhook_endpoints (id, tenant_id, url, description, event_types, enabled,
                                         secret)
    VALUES (${e.id}, ${e.tenantId}, ${e.url}, ${e.description},
            ${sql.array(e.eventTypes, 'text')}, ${e.enabled}, ${e.secret})
    RETURNING ${ENDPOINT}`);
}

/** A live endpoint of the tenant (`lock`: FOR UPDATE), with its secret when asked. */
export async function findEndpoint(
  db: Queryable,
  tenantId: string,
  id: string,
  lock = false,
): Promise<(WebhookEndpointRow & { secret: string }) | null> {
  return db.maybeOne(sql.type(endpointWithSecretRow)`
    SELECT ${ENDPOINT}, secret FROM quota.webhook_endpoints
    WHERE tenant_id = ${tenantId} AND id = ${id} AND deleted_at IS NULL
    ${lock ? sql.fragment`FOR UPDATE` : sql.fragment``}`);
}

export async function listEndpoints(db: Queryable, tenantId: string) {
  return db.any(sql.type(webhookEndpointRow)`
    SELECT ${ENDPOINT} FROM quota.webhook_endpoints
    WHERE tenant_id = ${tenantId} AND deleted_at IS NULL
    ORDER BY created_at, id`);
}

/** Which of these ids are live endpoints of the tenant. */
export async function existingEndpoints(db: Queryable, tenantId: string, ids: string[]) {
  return db.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM quota.webhook_endpoints
    WHERE tenant_id = ${tenantId} AND deleted_at IS NULL
      AND id = ANY(${sql.array(ids, 'text')})`);
}

export interface EndpointChanges {
  url?: string;
  description?: string;
  eventTypes?: string[];
  enabled?: boolean;
}

export async function updateEndpoint(db: Queryable, id: string, c: EndpointChanges) {
  const sets = [sql.fragment`updated_at = now()`];
  if (c.url !== undefined) sets.push(sql.fragment`url = ${c.url}`);
  if (c.description !== undefined) sets.push(sql.fragment`description = ${c.description}`);
  if (c.eventTypes !== undefined)
    sets.push(sql.fragment`event_types = ${sql.array(c.eventTypes, 'text')}`);
  if (c.enabled !== undefined) sets.push(sql.fragment`enabled = ${c.enabled}`);
  return db.one(sql.type(webhookEndpointRow)`
    UPDATE quota.webhook_endpoints SET ${sql.join(sets, sql.fragment`, `)}
    WHERE id = ${id} RETURNING ${ENDPOINT}`);
}

/** Deleted: found and listed no more; its unfinished deliveries are cancelled with it. */
export async function deleteEndpoint(db: Queryable, id: string): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE quota.webhook_endpoints SET deleted_at = now(), updated_at = now() WHERE id = ${id}`);
  await db.query(sql.unsafe`
    UPDATE quota.webhook_deliveries
    SET status = 'cancelled', finished_at = now(), updated_at = now(), next_attempt_at = NULL
    WHERE endpoint_id = ${id} AND status IN ('pending', 'retrying')`);
}

/** Whether an alert rule names the endpoint among its channels. */
export async function endpointInUse(db: Queryable, id: string): Promise<boolean> {
  return db.oneFirst(sql.type(existsRow)`
    SELECT EXISTS (SELECT 1 FROM quota.alert_rules WHERE ${id} = ANY(webhook_endpoint_ids))`);
}

export interface NewDelivery {
  id: string;
  tenantId: string;
  endpointId: string;
  alertEventId: string | null;
  eventType: string;
  messageId: string;
  payload: unknown;
  status: DeliveryStatus;
  attemptCount: number;
  /** Set for a delivery the engine sends (its outbox starts delivery/quota/<id> there). */
  workflowTaskQueue?: string;
}

export async function insertDelivery(db: Queryable, d: NewDelivery): Promise<DeliveryRow> {
  return db.one(sql.type(deliveryRow)`
    INSERT INTO quota.webhook_deliveries (id, tenant_id, endpoint_id, alert_event_id, event_type,
                                          message_id, payload, status, attempt_count,
                                          workflow_task_queue)
    VALUES (${d.id}, ${d.tenantId}, ${d.endpointId}, ${d.alertEventId}, ${d.eventType},
            ${d.messageId}, ${sql.jsonb(d.payload as never)}, ${d.status}, ${d.attemptCount},
            ${d.workflowTaskQueue ?? null})
    RETURNING ${DELIVERY}`);
}

/** A finished attempt's outcome, as the delivery's state. */
export async function recordDeliveryOutcome(
  db: Queryable,
  id: string,
  outcome: { status: DeliveryStatus; statusCode: number | null; error: string | null },
): Promise<DeliveryRow> {
  const finished = outcome.status === 'delivered' || outcome.status === 'dead';
  return db.one(sql.type(deliveryRow)`
    UPDATE quota.webhook_deliveries
    SET status = ${outcome.status}, last_status_code = ${outcome.statusCode},
        last_error = ${outcome.error}, updated_at = now(),
        finished_at = ${finished ? sql.fragment`now()` : sql.fragment`NULL`}
    WHERE id = ${id} RETURNING ${DELIVERY}`);
}

/** The tenant's deliveries, newest first; of one endpoint when given. */
export async function listDeliveries(
  db: Queryable,
  tenantId: string,
  filter: { endpointId: string | null; limit: number },
): Promise<readonly DeliveryRow[]> {
  const endpoint = filter.endpointId
    ? sql.fragment`AND endpoint_id = ${filter.endpointId}`
    : sql.fragment``;
  return db.any(sql.type(deliveryRow)`
    SELECT ${DELIVERY} FROM quota.webhook_deliveries
    WHERE tenant_id = ${tenantId} ${endpoint}
    ORDER BY created_at DESC, id DESC LIMIT ${filter.limit}`);
}

/** What an attempt sends: the delivery and its endpoint, or null when there is nothing to send. */
export const quotaAttemptTarget = z.object({
  id: z.string(),
  url: z.string(),
  secret: z.string(),
  message_id: z.string(),
  payload: z.record(z.unknown()),
});
export type QuotaAttemptTarget = z.infer<typeof quotaAttemptTarget>;

/** The attempt's row: its target, and whether its endpoint can still be sent to. */
const quotaAttemptRow = quotaAttemptTarget.extend({ sendable: z.boolean() });

/**
 * Marks the delivery delivering for this attempt and answers what to send; null when it has
 * ended (delivered, dead, cancelled) or its endpoint is gone or disabled (then it is cancelled).
 */
export async function beginQuotaAttempt(
  db: Queryable,
  id: string,
  attempt: number,
): Promise<QuotaAttemptTarget | null> {
  const row = await db.maybeOne(sql.type(quotaAttemptRow)`
    WITH target AS (
      SELECT d.id, e.url, e.secret, d.message_id, d.payload,
             e.deleted_at IS NULL AND e.enabled AS sendable
      FROM quota.webhook_deliveries d JOIN quota.webhook_endpoints e ON e.id = d.endpoint_id
      WHERE d.id = ${id} AND d.status IN ('pending', 'retrying', 'delivering')
      FOR UPDATE OF d)
    UPDATE quota.webhook_deliveries d
    SET status = CASE WHEN t.sendable THEN 'delivering' ELSE 'cancelled' END,
        attempt_count = CASE WHEN t.sendable THEN ${attempt} ELSE d.attempt_count END,
        last_error = CASE WHEN t.sendable THEN d.last_error ELSE 'endpoint_unavailable' END,
        finished_at = CASE WHEN t.sendable THEN NULL ELSE now() END,
        next_attempt_at = NULL, updated_at = now()
    FROM target t WHERE d.id = t.id
    RETURNING t.id, t.url, t.secret, t.message_id, t.payload, t.sendable`);
  return row?.sendable ? row : null;
}

/** An attempt's outcome: delivered, dead, or retrying at next_attempt_at. */
export async function recordQuotaAttempt(
  db: Queryable,
  a: {
    id: string;
    outcome: 'delivered' | 'retry' | 'dead';
    statusCode: number | null;
    error: string | null;
    nextAttemptAt: string | null;
  },
): Promise<void> {
  const status = a.outcome === 'retry' ? 'retrying' : a.outcome;
  await db.query(sql.unsafe`
    UPDATE quota.webhook_deliveries
    SET status = ${status}, last_status_code = ${a.statusCode}, last_error = ${a.error},
        next_attempt_at = ${a.nextAttemptAt}::timestamptz, updated_at = now(),
        finished_at = ${a.outcome === 'retry' ? sql.fragment`NULL` : sql.fragment`now()`}
    WHERE id = ${a.id}`);
}
