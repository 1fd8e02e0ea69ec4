import type { SendOutcome, WebhookRequest } from './http-delivery';

/**
 * The rules every service's webhook attempt follows, whoever makes it (the delivery workflow's
 * activity, or an API process sending a first attempt at once): what one attempt's outcome means
 * for the delivery, and when the next one is due.
 */

export interface AttemptInput {
  deliveryId: string;
  attempt: number;
  /** Seconds until the next attempt, or null when this is the last one. */
  retryInSeconds: number | null;
}

export type Send = (request: WebhookRequest) => Promise<SendOutcome>;

/** The attempt's verdict: a failure with no attempt left is dead. */
export function finalOutcome(
  sent: SendOutcome,
  retryInSeconds: number | null,
): SendOutcome['verdict'] {
  return sent.verdict === 'retry' && retryInSeconds === null ? 'dead' : sent.verdict;
}

/** When the next attempt is due after this outcome (a retry), else null. */
export function nextAttemptAt(
  outcome: SendOutcome['verdict'],
  retryInSeconds: number | null,
): string | null {
  return outcome === 'retry' ? new Date(Date.now() + retryInSeconds! * 1000).toISOString() : null;
}
