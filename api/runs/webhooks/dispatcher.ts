import type { PlatformDeps } from '../../../platform/deps';
import { createWebhookSender } from '../../../platform/webhooks/http-delivery';
import { beginDispatchedAttempt } from '../../../db/runs/deliveries';
import { webhookTerms } from './terms';
import { sendAndRecord } from './attempt';
import type { DeliveryStart } from './starter';

/** First attempts in flight per API process (each holds a connection to its receiver). */
const IN_FLIGHT_MAX = 32;
/** Deliveries waiting here; past this, new ones are left to the sweeper's workflows. */
const QUEUED_MAX = 10_000;
/** How soon a first attempt held back by an earlier one of another process asks again. */
const WAIT_RETRY_MS = 50;

/**
 * The first attempt of each delivery this API process makes (an event's, a test's, a
 * redelivery's), made here at once instead of through a workflow: signed, sent and recorded as
 * the delivery workflow's attempt would be (attempt.ts). A delivery that needs another attempt
 * is handed to its workflow delivery/runs/<id> (`startWorkflow`), which waits out the retry and
 * goes on. Deliveries to one endpoint leave in the order they were made: one first attempt per
 * endpoint at a time here, and none before an earlier one's of another process
 * (beginDispatchedAttempt). What this process cannot take in DISPATCH_WINDOW_SECONDS, or takes
 * and then dies with, the sweeper starts as a workflow (at least once: the same event id).
 */
export function createDeliveryDispatcher(
  deps: PlatformDeps,
  startWorkflow: (delivery: DeliveryStart) => void,
) {
  const sender = createWebhookSender({
    egressAllow: deps.config.webhooks.egressAllow,
    caFile: deps.config.webhooks.caFile,
    timeoutMs: deps.config.webhooks.attemptTimeoutMs,
  });
  const send = sender.send.bind(sender);
  const { retryDelaysSeconds } = webhookTerms(deps.config);
  /** Per endpoint, its deliveries in the order made; an endpoint in `busy` has one in flight. */
  const queues = new Map<string, DeliveryStart[]>();
  const busy = new Set<string>();
  const inFlight = new Set<Promise<void>>();
  let queued = 0;
  let stopped = false;

  const attempt = async (delivery: DeliveryStart): Promise<'done' | 'wait'> => {
    const target = await beginDispatchedAttempt(deps.pool, delivery.deliveryId);
    if (target === 'wait') return 'wait';
    if (target === null) return 'done'; // the sweeper's now, or ended
    const input = {
      deliveryId: delivery.deliveryId,
      attempt: 1,
      retryInSeconds: retryDelaysSeconds[0] ?? null,
    };
    const { verdict, nextAttemptAt } = await sendAndRecord(
      { pool: deps.pool, send },
      target,
      input,
    );
    if (verdict === 'retry')
      startWorkflow({
        ...delivery,
        resumeFrom: { attempt: 2, notBefore: nextAttemptAt },
      });
    return 'done';
  };

  const run = async (endpointId: string, delivery: DeliveryStart) => {
    let outcome: 'done' | 'wait' = 'done';
    try {
      outcome = await attempt(delivery);
    } catch (error) {
      // Left as it is: the sweeper starts its workflow, which attempts it again.
      deps.logger.warn(
        { err: (error as Error).message, deliveryId: delivery.deliveryId },
        'webhook first attempt left to its workflow',
      );
    }
    if (outcome === 'wait') {
      await new Promise((resolve) => setTimeout(resolve, WAIT_RETRY_MS));
      queues.get(endpointId)!.unshift(delivery);
      queued++;
    }
    busy.delete(endpointId);
  };

  const pump = () => {
    for (const [endpointId, queue] of queues) {
      if (inFlight.size >= IN_FLIGHT_MAX || stopped) return;
      if (busy.has(endpointId)) continue;
      const next = queue.shift();
      if (next === undefined) {
        queues.delete(endpointId);
        continue;
      }
      queued--;
      busy.add(endpointId);
      const running = run(endpointId, next).finally(() => {
        inFlight.delete(running);
        pump();
      });
      inFlight.add(running);
    }
  };

  return {
    /** After the row's transaction commits. A delivery not taken here is the sweeper's. */
    dispatch(delivery: DeliveryStart): void {
      if (stopped || queued >= QUEUED_MAX) return;
      const queue = queues.get(delivery.endpointId) ?? [];
      // In delivery_id order, whatever order their transactions committed in: an earlier one
      // queued behind a later one would hold it back (and itself) until the window closed.
      queue.splice(insertionIndex(queue, BigInt(delivery.deliveryId)), 0, delivery);
      queues.set(delivery.endpointId, queue);
      queued++;
      pump();
    },
    /** Takes no more; waits for the attempts in flight (the queued ones are the sweeper's). */
    async stop(): Promise<void> {
      stopped = true;
      await Promise.all(inFlight);
    },
  };
}

/** Where a delivery goes in a queue kept in ascending delivery_id order (usually its end). */
function insertionIndex(queue: DeliveryStart[], id: bigint): number {
  let i = queue.length;
  while (i > 0 && BigInt(queue[i - 1]!.deliveryId) > id) i--;
  return i;
}
