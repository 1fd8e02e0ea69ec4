import type { PlatformDeps } from '../../../platform/deps';
import { createWebhookSender } from '../../../platform/webhooks/http-delivery';
import {
  adoptLapsedDeliveries,
  beginDispatchedAttempt,
  renewDispatchLeases,
} from '../../../db/runs/deliveries';
import { webhookTerms } from '../../../platform/webhooks/terms';
import { sendAndRecord } from './attempt';
import type { DeliveryStart } from './starter';

/** First attempts in flight per API process (each holds a connection to its receiver). */
const IN_FLIGHT_MAX = 32;
/** Deliveries waiting here; past this, new ones are left for a dispatcher to adopt later. */
const QUEUED_MAX = 10_000;
/** How soon a first attempt held back by an earlier one of another process asks again. */
const WAIT_RETRY_MS = 50;
/**
 * How often the leases of the deliveries waiting here are renewed, and lapsed ones of other
 * processes adopted.
 */
const LEASE_TICK_MS = 1_000;

/**
 * The first attempt of each delivery this API process makes (an event's, a test's, a
 * redelivery's), made here at once instead of through a workflow: signed, sent and recorded as
 * the delivery workflow's attempt would be (attempt.ts). A delivery that needs another attempt
 * is handed to its workflow delivery/runs/<id> (`startWorkflow`), which waits out the retry and
 * goes on. Deliveries to one endpoint leave in the order they were made: one first attempt per
 * endpoint at a time here, and none before an earlier one's of another process
 * (beginDispatchedAttempt). Each delivery waiting here keeps its lease (renewed), so a long
 * backlog goes out from here at the receiver's pace; what a process drops (past QUEUED_MAX), or
 * dies with before attempting, another process's dispatcher adopts once its lease runs out. One
 * it dies with mid-attempt is the sweeper's: its workflow attempts again (the same event id).
 */
export function createDeliveryDispatcher(
  deps: PlatformDeps,
  taskQueue: string,
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
    if (target === null) return 'done'; // another process's now, or ended
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
      // Left as it is: adopted again once its lease lapses, or, begun, attempted by its workflow.
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

  const enqueue = (delivery: DeliveryStart) => {
    const queue = queues.get(delivery.endpointId) ?? [];
    // In delivery_id order, whatever order their transactions committed in: an earlier one
    // queued behind a later one would hold it back (and itself) until its lease ran out.
    queue.splice(insertionIndex(queue, BigInt(delivery.deliveryId)), 0, delivery);
    queues.set(delivery.endpointId, queue);
    queued++;
  };

  const tickLeases = async () => {
    await renewDispatchLeases(
      deps.pool,
      [...queues.values()].flat().map((d) => d.deliveryId),
    );
    const room = QUEUED_MAX - queued;
    if (room <= 0 || stopped) return;
    for (const delivery of await adoptLapsedDeliveries(deps.pool, taskQueue, room))
      enqueue(delivery);
    pump();
  };
  const leases = setInterval(() => {
    tickLeases().catch((error: Error) =>
      deps.logger.warn({ err: error.message }, 'webhook dispatch leases not renewed'),
    );
  }, LEASE_TICK_MS);
  leases.unref();

  return {
    /** After the row's transaction commits. One not taken here is adopted once its lease lapses. */
    dispatch(delivery: DeliveryStart): void {
      if (stopped || queued >= QUEUED_MAX) return;
      enqueue(delivery);
      pump();
    },
    /** Takes no more; waits for the attempts in flight (the queued ones' leases lapse). */
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(leases);
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
