import type { DatabasePool } from '../../../db/pool';
import { platformVersion } from '../../../db/repository';
import { recordAttempt, type AttemptTarget } from '../../../db/runs/deliveries';
import {
  finalOutcome,
  nextAttemptAt,
  type AttemptInput,
  type Send,
} from '../../../platform/webhooks/attempts';
import { svcSignature } from '../../../platform/webhooks/signing';
import type { AttemptVerdict } from '../../../contracts/shared/delivery';
import { DELIVERY_HEALTH_NOTICES } from './catalogue';

export const USER_AGENT = `Svc/${platformVersion()}`;

/**
 * One begun attempt of a runs delivery, whoever began it (the delivery workflow's activity, or
 * for a first attempt the API process that made the delivery): signs the body now, sends it and
 * records the outcome with its consequences. A failure with no attempt left is dead.
 */
export async function sendAndRecord(
  deps: { pool: DatabasePool; send: Send },
  target: AttemptTarget,
  input: AttemptInput,
): Promise<{ verdict: AttemptVerdict; nextAttemptAt: string | null }> {
  const startedAt = new Date().toISOString();
  const sent = await deps.send(requestOf(target, input.attempt));
  const outcome = finalOutcome(sent, input.retryInSeconds);
  const next = nextAttemptAt(outcome, input.retryInSeconds);
  await recordAttempt(deps.pool, {
    deliveryId: input.deliveryId,
    attempt: input.attempt,
    startedAt,
    outcome,
    statusCode: sent.status,
    error: sent.verdict === 'delivered' ? null : sent.error,
    // A notice's own death raises none: a failing endpoint subscribed to notices must not feed itself.
    raisesNotices: !DELIVERY_HEALTH_NOTICES.includes(target.event_type),
    nextAttemptAt: next,
  });
  return { verdict: outcome, nextAttemptAt: next };
}

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
