import { sql } from '../../../db/pool';
import {
  deliveryWorkflowId,
  type DeliveryWorkflowInput,
} from '../../../workflows/shared/delivery-definitions';
import {
  executionSearchAttributes,
  WEBHOOK_ENDPOINT,
} from '../../../workflows/shared/search-attributes';
import {
  alertMailWorkflowId,
  type AlertMailWorkflowInput,
} from '../../../workflows/quota/alert-mail-definitions';
import { deliverySummary } from '../../../workflows/shared/summaries';
import { alertMailSummary } from '../../../workflows/quota/summaries';
import {
  createOutboxDispatcher,
  type OutboxSource,
  type WorkflowStart,
} from '../../../platform/outbox';
import type { PlatformDeps } from '../../../platform/deps';
import { taskQueues } from '../../../platform/temporal';
import { webhookTerms } from '../../../platform/webhooks/terms';

/**
 * An alert's notices as outboxes: a pending row (written with its alert event, in the consume's
 * transaction or by the ledger flush) is started on the quota queue of the deployment that wrote
 * it: a webhook delivery as delivery/quota/<id> by the platform delivery engine, a mail as
 * alert-mail/<id>; workflow_started records it. Only the sweepers start them: the row is written
 * where no client is at hand.
 */
interface NoticeStart {
  id: string;
  tenantId: string;
  /** A delivery's endpoint; null for a mail. */
  endpointId: string | null;
  /** A delivery's event type; null for a mail (its summary only). */
  eventType: string | null;
  /** A mail's recipient, of which its summary shows the domain only; null for a delivery. */
  recipient: string | null;
  /** The alert rule the notice is of (its summary only); null for a test delivery. */
  ruleId: string | null;
}

function noticeStarts(
  deps: PlatformDeps,
  table: 'webhook_deliveries' | 'alert_mails',
  workflowOf: (row: NoticeStart, queue: string) => WorkflowStart,
): OutboxSource<NoticeStart> {
  const queue = taskQueues(deps.config.taskQueuePrefix).quota;
  const rows = sql.identifier(['quota', table]);
  const delivery = table === 'webhook_deliveries';
  const endpoint = delivery ? sql.fragment`n.endpoint_id` : sql.fragment`NULL::text`;
  const eventType = delivery ? sql.fragment`n.event_type` : sql.fragment`NULL::text`;
  const recipient = delivery ? sql.fragment`NULL::text` : sql.fragment`n.recipient`;
  return {
    name: `quota ${table} starts`,
    keyOf: (row) => row.id,
    due: async (limit, skip) =>
      (await deps.pool.any(sql.unsafe`
        SELECT n.id, n.tenant_id AS "tenantId", ${endpoint} AS "endpointId",
               ${eventType} AS "eventType", ${recipient} AS "recipient", e.rule_id AS "ruleId"
        FROM ${rows} n LEFT JOIN quota.alert_events e ON e.id = n.alert_event_id
        WHERE NOT n.workflow_started AND n.status = 'pending' AND n.workflow_task_queue = ${queue}
          AND NOT (n.id = ANY(${sql.array(skip, 'text')}))
        ORDER BY n.created_at, n.id LIMIT ${limit}`)) as NoticeStart[],
    workflowOf: (row) => workflowOf(row, queue),
    markStarted: async (ids) => {
      await deps.pool.query(sql.unsafe`
        UPDATE ${rows} SET workflow_started = true WHERE id = ANY(${sql.array(ids, 'text')})`);
    },
  };
}

function webhookDeliveryStarts(deps: PlatformDeps) {
  return noticeStarts(deps, 'webhook_deliveries', (row, queue) => {
    const input: DeliveryWorkflowInput = {
      service: 'quota',
      deliveryId: row.id,
      ...webhookTerms(deps.config),
    };
    return {
      workflowType: 'deliveryWorkflow',
      options: {
        workflowId: deliveryWorkflowId('quota', row.id),
        taskQueue: queue,
        args: [input],
        typedSearchAttributes: [
          ...executionSearchAttributes(row.tenantId, 'quota'),
          { key: WEBHOOK_ENDPOINT, value: row.endpointId! },
        ],
        ...deliverySummary({
          service: 'quota',
          deliveryId: row.id,
          tenantId: row.tenantId,
          endpointId: row.endpointId!,
          eventType: row.eventType,
        }),
      },
    };
  });
}

function alertMailStarts(deps: PlatformDeps) {
  return noticeStarts(deps, 'alert_mails', (row, queue) => {
    // A mail is retried on the webhooks' waits: one retry rule for an alert's notices.
    const input: AlertMailWorkflowInput = { mailId: row.id, ...webhookTerms(deps.config) };
    return {
      workflowType: 'alertMailWorkflow',
      options: {
        workflowId: alertMailWorkflowId(row.id),
        taskQueue: queue,
        args: [input],
        typedSearchAttributes: executionSearchAttributes(row.tenantId, 'quota'),
        ...alertMailSummary({
          mailId: row.id,
          tenantId: row.tenantId,
          recipient: row.recipient ?? '',
          ruleId: row.ruleId,
        }),
      },
    };
  });
}

/** Starts the workflows of alerts' notices, webhook deliveries and mails. */
export function createAlertDeliveryStarter(deps: PlatformDeps) {
  const dispatchers = [
    createOutboxDispatcher(deps, webhookDeliveryStarts(deps)),
    createOutboxDispatcher(deps, alertMailStarts(deps)),
  ];
  return {
    start: () => dispatchers.forEach((d) => d.start()),
    stop: async () => {
      await Promise.all(dispatchers.map((d) => d.stop()));
    },
  };
}
