import type { Context as TraceContext } from '@opentelemetry/api';
import type { DeliveryWorkflowInput } from '../../../contracts/shared/delivery';

/** A delivery handed over for its first attempt, or for its workflow (starter.ts). */
export interface DeliveryStart {
  deliveryId: string;
  tenantId: string;
  endpointId: string;
  /** For the execution's summary; looked up when a caller did not have it at hand. */
  eventType?: string;
  /** A delivery whose first attempt was made without its workflow: where the workflow goes on. */
  resumeFrom?: DeliveryWorkflowInput['resumeFrom'];
  /** The trace it was made in (the request's), which its first attempt continues; in memory only. */
  origin?: TraceContext;
}

/**
 * The deliveries waiting in one dispatcher (dispatcher.ts) and its first attempts in flight:
 * per endpoint in delivery_id order, one attempt at a time each, so that an endpoint's
 * deliveries leave in the order they were made. Changed only by the helpers below.
 */
export interface Backlog {
  /** Per endpoint, its deliveries in the order made (ascending delivery_id). */
  queues: Map<string, DeliveryStart[]>;
  /** Endpoints with a first attempt in flight: one at a time each, to keep their order. */
  busy: Set<string>;
  inFlight: Set<Promise<void>>;
  /** Deliveries in `queues`. */
  queued: number;
  stopped: boolean;
}

/** An attempt's outcome: made (or not this dispatcher's any more), or held back for now. */
export type AttemptOutcome = 'done' | 'wait';

/** How soon a first attempt held back by an earlier one of another process asks again. */
export const WAIT_RETRY_MS = 50;

export function emptyBacklog(): Backlog {
  return { queues: new Map(), busy: new Set(), inFlight: new Set(), queued: 0, stopped: false };
}

/**
 * Queues a delivery in delivery_id order, whatever order it arrives in (transactions commit out
 * of order; a lapsed one is adopted late; one held back comes back): an earlier one queued
 * behind a later one would hold that one back, and so itself, for as long as this process
 * renews both leases.
 */
export function enqueue(backlog: Backlog, delivery: DeliveryStart): void {
  const queue = backlog.queues.get(delivery.endpointId) ?? [];
  queue.splice(insertionIndex(queue, BigInt(delivery.deliveryId)), 0, delivery);
  backlog.queues.set(delivery.endpointId, queue);
  backlog.queued++;
}

/** The deliveries waiting (not those in flight), for their leases. */
export const waitingIds = (backlog: Backlog): string[] =>
  [...backlog.queues.values()].flat().map((d) => d.deliveryId);

/** How one dispatcher makes an attempt, and hears of one that threw (left to its lease). */
export interface Attempts {
  inFlightMax: number;
  attempt: (delivery: DeliveryStart) => Promise<AttemptOutcome>;
  failed: (delivery: DeliveryStart, error: unknown) => void;
}

/**
 * Starts the next attempt of each endpoint not busy, up to `inFlightMax`; each attempt's end
 * starts the next ones again. One held back goes back to its place after WAIT_RETRY_MS.
 */
export function startWaitingAttempts(backlog: Backlog, attempts: Attempts): void {
  for (const [endpointId, queue] of backlog.queues) {
    if (backlog.inFlight.size >= attempts.inFlightMax || backlog.stopped) return;
    if (backlog.busy.has(endpointId)) continue;
    const next = queue.shift();
    if (next === undefined) {
      backlog.queues.delete(endpointId);
      continue;
    }
    backlog.queued--;
    backlog.busy.add(endpointId);
    const running = attemptInTurn(backlog, next, attempts).finally(() => {
      backlog.inFlight.delete(running);
      startWaitingAttempts(backlog, attempts);
    });
    backlog.inFlight.add(running);
  }
}

async function attemptInTurn(
  backlog: Backlog,
  delivery: DeliveryStart,
  attempts: Attempts,
): Promise<void> {
  try {
    if ((await attempts.attempt(delivery)) === 'wait') {
      await new Promise((resolve) => setTimeout(resolve, WAIT_RETRY_MS));
      enqueue(backlog, delivery);
    }
  } catch (error) {
    // Left as it is: adopted again once its lease lapses, or, begun, attempted by its workflow.
    attempts.failed(delivery, error);
  } finally {
    backlog.busy.delete(delivery.endpointId);
  }
}

/** Where a delivery goes in a queue kept in ascending delivery_id order (usually its end). */
function insertionIndex(queue: DeliveryStart[], id: bigint): number {
  let i = queue.length;
  while (i > 0 && BigInt(queue[i - 1]!.deliveryId) > id) i--;
  return i;
}
