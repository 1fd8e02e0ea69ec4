import { ROOT_CONTEXT, context } from '@opentelemetry/api';
import type { PlatformDeps } from '../../../platform/deps';
import { createWebhookSender } from '../../../platform/webhooks/http-delivery';
import {
  adoptLapsedDeliveries,
  beginDispatchedAttempt,
  renewDispatchLeases,
} from '../../../db/runs/deliveries';
import type { Send } from '../../../platform/webhooks/attempts';
import { webhookTerms } from '../../../platform/webhooks/terms';
import { sendAndRecord } from './attempt';
import {
  emptyBacklog,
  enqueue,
  startWaitingAttempts,
  waitingIds,
  type AttemptOutcome,
  type Attempts,
  type Backlog,
  type DeliveryStart,
} from './backlog';

/** First attempts in flight per API process (each holds a connection to its receiver). */
const IN_FLIGHT_MAX = 32;
/** Deliveries waiting here; past this, new ones are left for a dispatcher to adopt later. */
const QUEUED_MAX = 10_000;
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
  const terms = firstAttemptTerms(deps, startWorkflow);
  const backlog = emptyBacklog();
  const attempts: Attempts = {
    inFlightMax: IN_FLIGHT_MAX,
    // In the trace of the request that made it, not of whichever attempt's end started it.
    attempt: (delivery) =>
      context.with(delivery.origin ?? ROOT_CONTEXT, () => attemptFirst(deps, terms, delivery)),
    failed: (delivery, error) =>
      deps.logger.warn(
        { err: (error as Error).message, deliveryId: delivery.deliveryId },
        'webhook first attempt left to its workflow',
      ),
  };
  const pump = () => startWaitingAttempts(backlog, attempts);
  const leases = startLeaseTicks(deps, taskQueue, backlog, pump);

  return {
    /** After the row's transaction commits. One not taken here is adopted once its lease lapses. */
    dispatch(delivery: DeliveryStart): void {
      if (backlog.stopped || backlog.queued >= QUEUED_MAX) return;
      enqueue(backlog, { ...delivery, origin: context.active() });
      pump();
    },
    /** Takes no more; waits for the attempts in flight (the queued ones' leases lapse). */
    async stop(): Promise<void> {
      backlog.stopped = true;
      clearInterval(leases);
      await Promise.all(backlog.inFlight);
    },
  };
}

/** How this process makes a first attempt, and hands a delivery that needs another on. */
interface FirstAttemptTerms {
  send: Send;
  retryDelaysSeconds: readonly number[];
  startWorkflow: (delivery: DeliveryStart) => void;
}

function firstAttemptTerms(
  deps: PlatformDeps,
  startWorkflow: (delivery: DeliveryStart) => void,
): FirstAttemptTerms {
  const sender = createWebhookSender({
    egressAllow: deps.config.webhooks.egressAllow,
    caFile: deps.config.webhooks.caFile,
    timeoutMs: deps.config.webhooks.attemptTimeoutMs,
  });
  const { retryDelaysSeconds } = webhookTerms(deps.config);
  return { send: sender.send.bind(sender), retryDelaysSeconds, startWorkflow };
}

/** A delivery's first attempt; 'wait' while an earlier one of its endpoint is outstanding. */
async function attemptFirst(
  deps: PlatformDeps,
  terms: FirstAttemptTerms,
  delivery: DeliveryStart,
): Promise<AttemptOutcome> {
  const target = await beginDispatchedAttempt(deps.pool, delivery.deliveryId);
  if (target === 'wait') return 'wait';
  if (target === null) return 'done'; // another process's now, or ended
  const input = {
    deliveryId: delivery.deliveryId,
    attempt: 1,
    retryInSeconds: terms.retryDelaysSeconds[0] ?? null,
  };
  const { verdict, nextAttemptAt } = await sendAndRecord(
    { pool: deps.pool, send: terms.send },
    target,
    input,
  );
  if (verdict === 'retry')
    terms.startWorkflow({
      ...delivery,
      resumeFrom: { attempt: 2, notBefore: nextAttemptAt },
    });
  return 'done';
}

/**
 * Renews the leases of the deliveries waiting here, then adopts the lapsed ones of other
 * processes into the room left below QUEUED_MAX.
 */
async function tickLeases(
  deps: PlatformDeps,
  taskQueue: string,
  backlog: Backlog,
  pump: () => void,
): Promise<void> {
  await renewDispatchLeases(deps.pool, waitingIds(backlog));
  const room = QUEUED_MAX - backlog.queued;
  if (room <= 0 || backlog.stopped) return;
  for (const delivery of await adoptLapsedDeliveries(deps.pool, taskQueue, room))
    enqueue(backlog, delivery);
  pump();
}

/** tickLeases every LEASE_TICK_MS; the timer does not keep the process alive (stop clears it). */
function startLeaseTicks(
  deps: PlatformDeps,
  taskQueue: string,
  backlog: Backlog,
  pump: () => void,
): NodeJS.Timeout {
  const leases = setInterval(() => {
    tickLeases(deps, taskQueue, backlog, pump).catch((error: Error) =>
      deps.logger.warn({ err: error.message }, 'webhook dispatch leases not renewed'),
    );
  }, LEASE_TICK_MS);
  leases.unref();
  return leases;
}
