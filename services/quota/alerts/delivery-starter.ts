import {
  dueNoticeStarts,
  markNoticesStarted,
  type NoticeStart,
  type NoticeTable,
} from '../../../db/quota/notice-starts';
import { deliveryWorkflowId, type DeliveryWorkflowInput } from '../../../contracts/shared/delivery';
import {
  executionSearchAttributes,
  WEBHOOK_ENDPOINT,
} from '../../../contracts/shared/search-attributes';
import {
  alertMailWorkflowId,
  type AlertMailWorkflowInput,
} from '../../../contracts/quota/alert-mail';
import { deliverySummary } from '../../../contracts/shared/summaries';
import { alertMailSummary } from '../../../contracts/quota/summaries';
import {
  createOutboxDispatcher,
  type OutboxSource,
  type WorkflowStart,
} from '../../../platform/outbox';
import type { PlatformDeps } from '../../../platform/deps';
import { taskQueues } from '../../../contracts/shared/task-queues';
import { webhookTerms } from '../../../platform/webhooks/terms';

/**
 * An alert's notices as outboxes: a pending row (written with its alert event, in the consume's
 * transaction or by the ledger flush) is started on the quota queue of the deployment that wrote
 * it: a webhook delivery as delivery/quota/<id> by the platform delivery engine, a mail as
 * alert-mail/<id>; workflow_started records it (db/quota/notice-starts.ts). Only the sweepers
 * start them: the row is written where no client is at hand.
 */
function noticeStarts(
  deps: PlatformDeps,
  table: NoticeTable,
  workflowOf: (row: NoticeStart, queue: string) => WorkflowStart,
): OutboxSource<NoticeStart> {
  const queue = taskQueues(deps.config.taskQueuePrefix).quota;
  return {
    name: `quota ${table} starts`,
    keyOf: (row) => row.id,
    due: (limit, skip) => dueNoticeStarts(deps.pool, table, { queue, limit, skip }),
    workflowOf: (row) => workflowOf(row, queue),
    markStarted: (ids) => markNoticesStarted(deps.pool, table, ids),
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
