import { sql } from '../../../db/pool';
import {
  deliveryWorkflowId,
  type DeliveryWorkflowInput,
} from '../../../workflows/platform/delivery-definitions';
import {
  executionSearchAttributes,
  WEBHOOK_ENDPOINT,
} from '../../../workflows/platform/search-attributes';
import { createOutboxDispatcher, type OutboxSource } from '../../platform/outbox';
import type { PlatformDeps } from '../../platform/service';
import { taskQueues } from '../../platform/temporal';
import { webhookTerms } from '../../runs/webhooks/terms';

/**
 * An alert's deliveries as an outbox: a pending row (written with its alert event, in the
 * consume's transaction or by the ledger flush) is started as delivery/quota/<id> on the quota
 * queue of the deployment that wrote it, by the platform delivery engine; workflow_started
 * records it. Only the sweeper starts them: the row is written where no client is at hand.
 */
interface DeliveryStart {
  id: string;
  tenantId: string;
  endpointId: string;
}

function alertDeliveryStarts(deps: PlatformDeps): OutboxSource<DeliveryStart> {
  const queue = taskQueues(deps.config.taskQueuePrefix).quota;
  return {
    name: 'quota delivery starts',
    keyOf: (row) => row.id,
    due: async (limit, skip) =>
      (await deps.pool.any(sql.unsafe`
        SELECT id, tenant_id AS "tenantId", endpoint_id AS "endpointId"
        FROM quota.webhook_deliveries
        WHERE NOT workflow_started AND status = 'pending' AND workflow_task_queue = ${queue}
          AND NOT (id = ANY(${sql.array(skip, 'text')}))
        ORDER BY created_at, id LIMIT ${limit}`)) as DeliveryStart[],
    workflowOf: (row) => {
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
            { key: WEBHOOK_ENDPOINT, value: row.endpointId },
          ],
        },
      };
    },
    markStarted: async (ids) => {
      await deps.pool.query(sql.unsafe`
        UPDATE quota.webhook_deliveries SET workflow_started = true
        WHERE id = ANY(${sql.array(ids, 'text')})`);
    },
  };
}

export const createAlertDeliveryStarter = (deps: PlatformDeps) =>
  createOutboxDispatcher(deps, alertDeliveryStarts(deps));
