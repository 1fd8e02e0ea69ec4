import { z } from 'zod';
import { sql } from '../pool';
import type { Queryable } from './queryable';

/**
 * An alert's notices as outboxes (services/quota/alerts/delivery-starter.ts): the pending rows of
 * quota.webhook_deliveries and quota.alert_mails whose workflow is not started yet, and the
 * statement that records a start. One statement serves both tables: a delivery has an endpoint
 * and an event type, a mail a recipient.
 */
export type NoticeTable = 'webhook_deliveries' | 'alert_mails';

const noticeStart = z.object({
  id: z.string(),
  tenantId: z.string(),
  /** A delivery's endpoint; null for a mail. */
  endpointId: z.string().nullable(),
  /** A delivery's event type; null for a mail (its summary only). */
  eventType: z.string().nullable(),
  /** A mail's recipient, of which its summary shows the domain only; null for a delivery. */
  recipient: z.string().nullable(),
  /** The alert rule the notice is of (its summary only); null for a test delivery. */
  ruleId: z.string().nullable(),
});
export type NoticeStart = z.infer<typeof noticeStart>;

/**
 * Pending notices of `table` on `queue` whose workflow is not started, oldest first, none of
 * `skip`.
 */
export async function dueNoticeStarts(
  db: Queryable,
  table: NoticeTable,
  w: { queue: string; limit: number; skip: string[] },
): Promise<NoticeStart[]> {
  const rows = sql.identifier(['quota', table]);
  const delivery = table === 'webhook_deliveries';
  const endpoint = delivery ? sql.fragment`n.endpoint_id` : sql.fragment`NULL::text`;
  const eventType = delivery ? sql.fragment`n.event_type` : sql.fragment`NULL::text`;
  const recipient = delivery ? sql.fragment`NULL::text` : sql.fragment`n.recipient`;
  const due = await db.any(sql.type(noticeStart)`
    SELECT n.id, n.tenant_id AS "tenantId", ${endpoint} AS "endpointId",
           ${eventType} AS "eventType", ${recipient} AS "recipient", e.rule_id AS "ruleId"
    FROM ${rows} n LEFT JOIN quota.alert_events e ON e.id = n.alert_event_id
    WHERE NOT n.workflow_started AND n.status = 'pending' AND n.workflow_task_queue = ${w.queue}
      AND NOT (n.id = ANY(${sql.array(w.skip, 'text')}))
    ORDER BY n.created_at, n.id LIMIT ${w.limit}`);
  return [...due];
}

/** Temporal has these notices' workflows. */
export async function markNoticesStarted(
  db: Queryable,
  table: NoticeTable,
  ids: string[],
): Promise<void> {
  await db.query(sql.unsafe`
    UPDATE ${sql.identifier(['quota', table])} SET workflow_started = true WHERE id = ANY(${sql.array(ids, 'text')})`);
}
