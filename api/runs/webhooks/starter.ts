import type { PlatformDeps } from '../../../platform/deps';
import { createOutboxDispatcher, type OutboxSource } from '../../../platform/outbox';
import { taskQueues } from '../../../platform/temporal';
import { sql } from '../../../db/pool';
import {
  executionSearchAttributes,
  WEBHOOK_ENDPOINT,
} from '../../../workflows/platform/search-attributes';
import {
  deliveryWorkflowId,
  type DeliveryWorkflowInput,
} from '../../../workflows/platform/delivery-definitions';
import { deliverySummary } from '../../../workflows/platform/summaries';
import { webhookTerms } from './terms';

/** The runs queue of this deployment: its delivery rows are started there (and only those). */
export const runsQueue = (deps: Pick<PlatformDeps, 'config'>): string =>
  taskQueues(deps.config.taskQueuePrefix).runs;

/** A delivery younger than this is still being started by the process that stored it. */
const DELIVERY_SWEEP_GRACE_SECONDS = 3;

interface DeliveryStart {
  deliveryId: string;
  tenantId: string;
  endpointId: string;
  /** For the execution's summary; looked up when a caller did not have it at hand. */
  eventType?: string;
}

/**
 * Delivery starts as an outbox: a pending delivery row (made by the publisher, a test call or a
 * redelivery) is started as delivery/runs/<delivery_id>; workflow_started records it.
 */
function deliveryStarts(deps: PlatformDeps): OutboxSource<DeliveryStart> {
  const queue = runsQueue(deps);
  return {
    name: 'delivery starts',
    keyOf: (row) => row.deliveryId,
    due: async (limit, skip) =>
      (await deps.pool.any(sql.unsafe`
        SELECT delivery_id::text AS "deliveryId", tenant_id AS "tenantId", endpoint_id AS "endpointId",
               event_type AS "eventType"
        FROM runs.webhook_deliveries
        WHERE NOT workflow_started AND state = 'pending' AND workflow_task_queue = ${queue}
          AND created_at < now() - make_interval(secs => ${DELIVERY_SWEEP_GRACE_SECONDS})
          AND NOT (delivery_id::text = ANY(${sql.array(skip, 'text')}))
        ORDER BY delivery_id LIMIT ${limit}`)) as DeliveryStart[],
    workflowOf: async (row) => {
      const input: DeliveryWorkflowInput = {
        service: 'runs',
        deliveryId: row.deliveryId,
        ...webhookTerms(deps.config),
      };
      return {
        workflowType: 'deliveryWorkflow',
        options: {
          workflowId: deliveryWorkflowId('runs', row.deliveryId),
          taskQueue: queue,
          args: [input],
          typedSearchAttributes: [
            ...executionSearchAttributes(row.tenantId, 'runs'),
            { key: WEBHOOK_ENDPOINT, value: row.endpointId },
          ],
          ...deliverySummary({
            service: 'runs',
            deliveryId: row.deliveryId,
            tenantId: row.tenantId,
            endpointId: row.endpointId,
            eventType: row.eventType ?? (await eventTypeOf(deps, row.deliveryId)),
          }),
        },
      };
    },
    markStarted: async (ids) => {
      await deps.pool.query(sql.unsafe`
        UPDATE runs.webhook_deliveries SET workflow_started = true
        WHERE delivery_id = ANY(${sql.array(ids, 'int8')})`);
    },
  };
}

/** A delivery's event type (a caller that started it without it at hand). */
async function eventTypeOf(deps: PlatformDeps, deliveryId: string): Promise<string | null> {
  return (await deps.pool.maybeOneFirst(sql.unsafe`
    SELECT event_type FROM runs.webhook_deliveries WHERE delivery_id = ${deliveryId}::int8`)) as
    string | null;
}

/** Starts delivery workflows off the request path (platform/outbox.ts). */
export function createDeliveryStarter(deps: PlatformDeps) {
  const dispatcher = createOutboxDispatcher(deps, deliveryStarts(deps));
  return {
    ...dispatcher,
    /** After the row's transaction commits. */
    startInBackground: (row: DeliveryStart) => dispatcher.enqueue(row),
  };
}
export type DeliveryStarter = ReturnType<typeof createDeliveryStarter>;
