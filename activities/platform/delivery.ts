import { Context } from '@temporalio/activity';
import type { DatabasePool } from '../../db/pool';
import { platformVersion } from '../../db/repository';
import type { Config } from '../../platform/config';
import {
  createWebhookSender,
  type SendOutcome,
  type WebhookRequest,
} from '../../platform/webhooks/http-delivery';
import { signedMessage } from '../../api/quota/webhooks';
import { beginQuotaAttempt, recordQuotaAttempt } from '../../db/quota/webhooks';
import { svcSignature } from '../../platform/webhooks/signing';
import { DELIVERY_HEALTH_NOTICES } from '../../api/runs/webhooks/catalogue';
import { beginAttempt, recordAttempt, type AttemptTarget } from '../../db/runs/deliveries';
import type {
  AttemptVerdict,
  DeliveringService,
} from '../../workflows/platform/delivery-definitions';

export const USER_AGENT = `Svc/${platformVersion()}`;
const HEARTBEAT_MS = 2_000;

export interface AttemptInput {
  service: DeliveringService;
  deliveryId: string;
  attempt: number;
  /** Seconds until the next attempt, or null when this is the last one. */
  retryInSeconds: number | null;
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
  /** A failure with no attempt left is dead. */
  const outcomeOf = (sent: SendOutcome, input: AttemptInput) =>
    sent.verdict === 'retry' && input.retryInSeconds === null ? 'dead' : sent.verdict;
  const nextAttemptAt = (outcome: AttemptVerdict, input: AttemptInput) =>
    outcome === 'retry' ? new Date(Date.now() + input.retryInSeconds! * 1000).toISOString() : null;

  async function attemptRunsDelivery(input: AttemptInput): Promise<AttemptVerdict> {
    const target = await beginAttempt(deps.pool, input.deliveryId, input.attempt);
    if (target === null) return 'ended';
    if (target === 'wait') return 'wait';
    const startedAt = new Date().toISOString();
    const sent = await send(requestOf(target, input.attempt));
    const outcome = outcomeOf(sent, input);
    await recordAttempt(deps.pool, {
      deliveryId: input.deliveryId,
      attempt: input.attempt,
      startedAt,
      outcome,
      statusCode: sent.status,
      error: sent.verdict === 'delivered' ? null : sent.error,
      // A notice's own death raises none: a failing endpoint subscribed to notices must not feed itself.
      raisesNotices: !DELIVERY_HEALTH_NOTICES.includes(target.event_type),
      nextAttemptAt: nextAttemptAt(outcome, input),
    });
    return outcome;
  }

  /** A quota delivery: signed by the Standard Webhooks scheme, at attempt time. */
  async function attemptQuotaDelivery(input: AttemptInput): Promise<AttemptVerdict> {
    const target = await beginQuotaAttempt(deps.pool, input.deliveryId, input.attempt);
    if (target === null) return 'ended';
    const sent = await send({
      url: target.url,
      ...signedMessage(target.secret, target.message_id, target.payload),
    });
    const outcome = outcomeOf(sent, input);
    await recordQuotaAttempt(deps.pool, {
      id: input.deliveryId,
      outcome,
      statusCode: sent.status,
      error: sent.verdict === 'delivered' ? null : sent.error,
      nextAttemptAt: nextAttemptAt(outcome, input),
    });
    return outcome;
  }

  return {
    async attemptWebhookDelivery(input: AttemptInput): Promise<AttemptVerdict> {
      return input.service === 'runs' ? attemptRunsDelivery(input) : attemptQuotaDelivery(input);
    },
  };
}
export type DeliveryActivities = ReturnType<typeof createDeliveryActivities>;

/** The envelope with this attempt's `delivery` block, and the spec's headers, signed now. */
export function requestOf(target: AttemptTarget, attempt: number) {
  const { truncated, ...rest } = target.envelope;
  const body = JSON.stringify({
    ...rest,
    delivery: {
      delivery_id: Number(target.delivery_id),
      attempt,
      endpoint_id: target.inline ? null : target.endpoint_id,
    },
    truncated,
  });
  const timestamp = Math.floor(Date.now() / 1000);
  const signature =
    target.secret === null || target.secret_origin === 'none'
      ? 'none'
      : svcSignature(target.secret, target.secret_origin, timestamp, body);
  return {
    url: target.url,
    body,
    headers: {
      'Content-Type': 'application/json',
      'X-Svc-Event': target.event_type,
      'X-Svc-Event-Id': target.event_id,
      'X-Svc-Delivery': target.delivery_id,
      'X-Svc-Attempt': String(attempt),
      'X-Svc-Timestamp': String(timestamp),
      'X-Svc-Signature': signature,
      'User-Agent': USER_AGENT,
    },
  };
}
