import { Context } from '@temporalio/activity';
import type { DatabasePool } from '../../db/pool';
import type { Config } from '../../platform/config';
import { createWebhookSender, type WebhookRequest } from '../../platform/webhooks/http-delivery';
import type { AttemptInput } from '../../platform/webhooks/attempts';
import { beginAttempt } from '../../db/runs/deliveries';
import { sendAndRecord } from '../../services/runs/webhooks/attempt';
import { sendAndRecordQuotaAttempt } from '../../services/quota/webhooks';
import type { AttemptVerdict, DeliveringService } from '../../contracts/shared/delivery';

const HEARTBEAT_MS = 2_000;

export interface ServiceAttemptInput extends AttemptInput {
  service: DeliveringService;
}

/**
 * One attempt of a webhook delivery of either service, at least once: each service marks it
 * delivering, signs the body at attempt time (runs: its own scheme; quota: Standard Webhooks),
 * sends it through this sender (egress-safe, platform/webhooks/http-delivery.ts) and records the
 * outcome with its consequences, by the rules of platform/webhooks/attempts.ts. The activity
 * itself retries only when Postgres or the worker fails; a retried attempt sends again with the
 * same event_id (receivers dedupe on it).
 */
export function createDeliveryActivities(deps: { pool: DatabasePool; config: Config }) {
  const sender = createWebhookSender({
    egressAllow: deps.config.webhooks.egressAllow,
    caFile: deps.config.webhooks.caFile,
    timeoutMs: deps.config.webhooks.attemptTimeoutMs,
  });
  /** Sends, heartbeating: a worker that dies mid-attempt is noticed within the heartbeat timeout. */
  const send = async (request: WebhookRequest) => {
    const beat = setInterval(() => Context.current().heartbeat(), HEARTBEAT_MS);
    return sender.send(request).finally(() => clearInterval(beat));
  };

  async function attemptRunsDelivery(input: AttemptInput): Promise<AttemptVerdict> {
    const target = await beginAttempt(deps.pool, input.deliveryId, input.attempt);
    if (target === null) return 'ended';
    if (target === 'wait') return 'wait';
    return (await sendAndRecord({ pool: deps.pool, send }, target, input)).verdict;
  }

  return {
    async attemptWebhookDelivery(input: ServiceAttemptInput): Promise<AttemptVerdict> {
      return input.service === 'runs'
        ? attemptRunsDelivery(input)
        : sendAndRecordQuotaAttempt({ pool: deps.pool, send }, input);
    },
  };
}
export type DeliveryActivities = ReturnType<typeof createDeliveryActivities>;
