import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * The Standard Webhooks scheme (standardwebhooks.com), by its reference library: a secret
 * `whsec_<base64 key>`, and per message the headers webhook-id, webhook-timestamp (Unix seconds)
 * and webhook-signature (`v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`).
 */

const SECRET_BYTES = 32;

export const newStandardSecret = (): string =>
  `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;

/** The three headers of a message signed now (each attempt signs again, same webhook-id). */
export function standardWebhookHeaders(
  secret: string,
  messageId: string,
  body: string,
  at = new Date(),
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(messageId, at, body),
  };
}
