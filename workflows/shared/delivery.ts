/**
 * The delivery workflow delivery/<service>/<delivery_id>: one webhook delivery, from its first
 * attempt to delivered or dead; for a runs delivery whose first attempt its API process made
 * (services/runs/webhooks/dispatcher.ts), from the attempt after it (resumeFrom). Each attempt is one activity (mark delivering, sign, send,
 * record); between attempts it sleeps the configured waits (about 10 s, 60 s, 5 min, 30 min:
 * five attempts at most). The row is the truth: an attempt that finds the delivery cancelled
 * (its endpoint deleted) or already ended answers `ended`, and the workflow stops.
 *
 * An operator finds a stuck delivery by TenantId, Service and WebhookEndpoint in the Web UI and
 * resets it like any execution: the attempt it re-runs sends again with the same event_id.
 *
 * Its end is upserted as DeliveryState (delivered, dead, ended): dead deliveries are one query.
 *
 * PATCHES, by the steps of Temporal's patching sample (see workflows/runs/run.ts):
 * - delivery-state: step 2, patched(): the DeliveryState upsert at the end. Histories recorded
 *   before it (no marker) replay its old branch, no upsert. Next (deprecatePatch) once no open
 *   deliveryWorkflow started before this patch was deployed.
 * RECORDED HISTORIES: test/histories/platform/delivery-*.json (before delivery-state).
 */
import { patched, proxyActivities, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import { DELIVERY_STATE } from '../../contracts/shared/search-attributes';
import type { DeliveryActivities } from '../../activities/shared/delivery';
import type { AttemptVerdict, DeliveryWorkflowInput } from '../../contracts/shared/delivery';

/**
 * An attempt's HTTP call is bounded by WEBHOOK_ATTEMPT_TIMEOUT_MS (at most 120 s); the activity
 * is retried only for the worker (its heartbeat stops) or Postgres failing, and sends again.
 */
const attempts = proxyActivities<DeliveryActivities>({
  startToCloseTimeout: '3 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute' },
});

/**
 * How often a first attempt held back by an earlier one of its endpoint looks again (an execution
 * started at a pending delivery's first attempt; since runs/0017 a dispatcher makes those).
 */
const RELEASED_ORDER_POLL_MS = 500;

export async function deliveryWorkflow(input: DeliveryWorkflowInput): Promise<AttemptVerdict> {
  const waits = input.retryDelaysSeconds;
  const resume = input.resumeFrom;
  if (resume?.notBefore) await sleep(Math.max(0, Date.parse(resume.notBefore) - Date.now()));
  for (let attempt = resume?.attempt ?? 1; ;) {
    const retryInSeconds = waits[attempt - 1] ?? null;
    const verdict = await attempts.attemptWebhookDelivery({
      service: input.service,
      deliveryId: input.deliveryId,
      attempt,
      retryInSeconds,
    });
    if (verdict === 'wait') {
      await sleep(RELEASED_ORDER_POLL_MS);
      continue;
    }
    if (verdict !== 'retry') return ended(verdict);
    await sleep(retryInSeconds! * 1000);
    attempt++;
  }
}

/** The delivery's end, kept in DeliveryState (patch delivery-state). */
function ended(verdict: AttemptVerdict): AttemptVerdict {
  if (patched('delivery-state')) upsertSearchAttributes([{ key: DELIVERY_STATE, value: verdict }]);
  return verdict;
}
