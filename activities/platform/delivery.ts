import { Context } from '@temporalio/activity';
import type { DatabasePool } from '../../db/pool';
import type { Config } from '../../platform/config';
import { createWebhookSender, type WebhookRequest } from '../../platform/webhooks/http-delivery';
import { signedMessage } from '../../api/quota/webhooks';
import { beginQuotaAttempt, recordQuotaAttempt } from '../../db/quota/webhooks';
import {
  finalOutcome,
  nextAttemptAt,
  sendAndRecord,
  type AttemptInput,
} from '../../api/runs/webhooks/attempt';
import { beginAttempt } from '../../db/runs/deliveries';
import type {
  AttemptVerdict,
  DeliveringService,
} from '../../workflows/platform/delivery-definitions';

const HEARTBEAT_MS = 2_000;

export interface ServiceAttemptInput extends AttemptInput {
  service: DeliveringService;
}

/**
 * One attempt of a webhook delivery of either service, at least once: marks it delivering, signs
 * the body at attempt time (runs: its own scheme; quota: Standard Webhooks), sends it
 * (egress-safe, platform/webhooks/http-delivery.ts) and records the outcome with its
 * consequences. A failure with no attempt left is dead. The activity itself
 * retries only when Postgres or the worker fails; a retried attempt sends again with the same
 * event_id (receivers dedupe on it).
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

  async function attemptRunsDelivery(input: ServiceAttemptInput): Promise<AttemptVerdict> {
    const target = await beginAttempt(deps.pool, input.deliveryId, input.attempt);
    if (target === null) return 'ended';
    if (target === 'wait') return 'wait';
    return (await sendAndRecord({ pool: deps.pool, send }, target, input)).verdict;
  }

  /** A quota delivery: signed by the Standard Webhooks scheme, at attempt time. */
  async function attemptQuotaDelivery(input: ServiceAttemptInput): Promise<AttemptVerdict> {
    const target = await beginQuotaAttempt(deps.pool, input.deliveryId, input.attempt);
    if (target === null) return 'ended';
    const sent = await send({
      url: target.url,
      ...signedMessage(target.secret, target.message_id, target.payload),
    });
    const outcome = finalOutcome(sent, input.retryInSeconds);
    await recordQuotaAttempt(deps.pool, {
      id: input.deliveryId,
      outcome,
      statusCode: sent.status,
      error: sent.verdict === 'delivered' ? null : sent.error,
      nextAttemptAt: nextAttemptAt(outcome, input.retryInSeconds),
    });
    return outcome;
  }

  return {
    async attemptWebhookDelivery(input: ServiceAttemptInput): Promise<AttemptVerdict> {
      return input.service === 'runs' ? attemptRunsDelivery(input) : attemptQuotaDelivery(input);
    },
  };
}
export type DeliveryActivities = ReturnType<typeof createDeliveryActivities>;
