import type { PlatformDeps } from '../../../platform/deps';
import { createOutboxDispatcher, type OutboxSource } from '../../../platform/outbox';
import { taskQueues } from '../../../contracts/shared/task-queues';
import {
  dueDeliveryStarts,
  findDeliveryEventType,
  markDeliveryWorkflowsStarted,
  type SweptDeliveryRow,
} from '../../../db/runs/webhooks';
import {
  executionSearchAttributes,
  WEBHOOK_ENDPOINT,
} from '../../../contracts/shared/search-attributes';
import { deliveryWorkflowId, type DeliveryWorkflowInput } from '../../../contracts/shared/delivery';
import { deliverySummary } from '../../../contracts/shared/summaries';
import { webhookTerms } from '../../../platform/webhooks/terms';
import { createDeliveryDispatcher } from './dispatcher';
import type { DeliveryStart } from './backlog';

/** The runs queue of this deployment: its delivery rows are started there (and only those). */
export const runsQueue = (deps: Pick<PlatformDeps, 'config'>): string =>
  taskQueues(deps.config.taskQueuePrefix).runs;

/** A delivery left retrying is swept this long after: its process may still be handing it over. */
const DELIVERY_SWEEP_GRACE_SECONDS = 2;

/**
 * Delivery starts as an outbox: delivery/runs/<delivery_id> for a delivery that needs its
 * workflow, workflow_started recording it. The dispatcher (dispatcher.ts) hands over those whose
 * first attempt asks for another; the sweeper takes one left delivering by a process that died
 * mid-attempt (once the attempt would have timed out), and one left retrying by a process that
 * died before handing it over. A pending row is never a workflow's: a dispatcher adopts it.
 */
function deliveryStarts(deps: PlatformDeps): OutboxSource<DeliveryStart> {
  const queue = runsQueue(deps);
  const attemptSeconds = Math.ceil(deps.config.webhooks.attemptTimeoutMs / 1000);
  return {
    name: 'delivery starts',
    keyOf: (row) => row.deliveryId,
    due: async (limit, skip) =>
      (
        await dueDeliveryStarts(deps.pool, {
          queue,
          attemptSeconds,
          graceSeconds: DELIVERY_SWEEP_GRACE_SECONDS,
          limit,
          skip,
        })
      ).map(startOf),
    workflowOf: async (row) => {
      const input: DeliveryWorkflowInput = {
        service: 'runs',
        deliveryId: row.deliveryId,
        ...webhookTerms(deps.config),
        ...(row.resumeFrom ? { resumeFrom: row.resumeFrom } : {}),
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
    markStarted: (ids) => markDeliveryWorkflowsStarted(deps.pool, ids),
  };
}

/** Where a swept delivery's workflow begins: the attempt its process died in, or the next. */
function startOf({ state, attempts, nextAttemptAt, ...start }: SweptDeliveryRow): DeliveryStart {
  if (state === 'delivering')
    return { ...start, resumeFrom: { attempt: attempts, notBefore: null } };
  return { ...start, resumeFrom: { attempt: attempts + 1, notBefore: nextAttemptAt } };
}

/** A delivery's event type (a caller that started it without it at hand). */
function eventTypeOf(deps: PlatformDeps, deliveryId: string): Promise<string | null> {
  return findDeliveryEventType(deps.pool, deliveryId);
}

/**
 * A new delivery's first attempt made in this process (dispatcher.ts), and delivery workflows
 * started off the request path (platform/outbox.ts) for those that need one.
 */
export function createDeliveryStarter(deps: PlatformDeps) {
  const outbox = createOutboxDispatcher(deps, deliveryStarts(deps));
  const firstAttempts = createDeliveryDispatcher(deps, runsQueue(deps), (row) =>
    outbox.enqueue(row),
  );
  return {
    ...outbox,
    /** After a pending row's transaction commits: its first attempt here, at once, in order. */
    dispatch: (row: DeliveryStart) => firstAttempts.dispatch(row),
    stop: async () => {
      await firstAttempts.stop();
      await outbox.stop();
    },
  };
}
export type DeliveryStarter = ReturnType<typeof createDeliveryStarter>;
