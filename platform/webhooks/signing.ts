import { createHmac, randomBytes } from 'node:crypto';

/** Where an endpoint's secret came from: it decides the signing key (the spec's Headers). */
export type SecretOrigin = 'generated' | 'supplied' | 'unknown';

/** A generated secret: 32 random bytes as 64 hex characters, shown once. */
export const generateWebhookSecret = (): string => randomBytes(32).toString('hex');

/**
 * `sha256=<hex>` of HMAC-SHA256 over `<timestamp>.<raw body>`. The key of a generated secret is
 * its 32 hex-decoded bytes; a supplied one (and one of unknown provenance) is used verbatim.
 */
export function svcSignature(
  secret: string,
  origin: SecretOrigin,
  timestamp: number,
  body: string,
): string {
  const key = origin === 'generated' ? Buffer.from(secret, 'hex') : Buffer.from(secret, 'utf8');
  return `sha256=${createHmac('sha256', key).update(`${timestamp}.${body}`).digest('hex')}`;
}
