import Joi from 'joi';
import { ulid } from '../../../db/ids';
import type { InlineWebhookRow } from '../../../db/runs/webhooks';
import { boundedText } from '../../../platform/text';
import {
  isWebhookUrl,
  WEBHOOK_URL_MAX_LENGTH,
  WEBHOOK_URL_PATTERN,
} from '../../../platform/webhooks/url';
import { runsError } from '../errors';
import { SUBSCRIBABLE, isSubscribable } from './catalogue';

/**
 * What every subscription is held to, a tenant endpoint (POST /webhooks) as an inline webhook of
 * a run or workflow submit: its url, events and secret, their schemas and the checks past them
 * (400 invalid_webhook_url, 400 unknown_event_type). And the inline webhook itself: its schema
 * and the row it is stored as. Imports nothing of the operations, so the run and workflow
 * submit schemas can take it.
 */

export const WEBHOOK_EVENTS_MAX = 64;
/** A supplied secret: any characters but U+0000 (the signing key is its UTF-8 bytes as given). */
export const WEBHOOK_SECRET_MAX_LENGTH = 256;

/** Checked past joi (400 invalid_webhook_url), as a run's image grammar is. */
export const webhookUrl = () =>
  boundedText(WEBHOOK_URL_MAX_LENGTH)
    .meta({ 'x-schema': { pattern: WEBHOOK_URL_PATTERN } })
    .description(
      'Absolute https without userinfo (no `user@`), else 400 invalid_webhook_url; at most 2048 characters (422). Stored as given.',
    );

/** Each entry is checked past joi (400 unknown_event_type), so any string is one to judge. */
export const webhookEvents = () =>
  Joi.array()
    .items(
      Joi.string()
        .allow('')
        .meta({ 'x-schema': { enum: [...SUBSCRIBABLE] } }),
    )
    .min(1)
    .max(WEBHOOK_EVENTS_MAX)
    .unique()
    .description(
      'A union of event types, aliases (run.terminal, workflow.terminal), wildcards (run.*, workflow.*, node.*, *) and notices (webhook.endpoint_degraded, tenant.delivery_dead, timer.fired, schedule.fired: by name only); 1 to 64 distinct entries (422). An entry that is none of them: 400 unknown_event_type.',
    );

export const suppliedSecret = () =>
  boundedText(WEBHOOK_SECRET_MAX_LENGTH, { min: 1 }).description(
    'Used verbatim as the signing key (its UTF-8 bytes), whatever it looks like: 1 to 256 characters, any but U+0000.',
  );

/**
 * The checks of a subscription past its schema, url first: 400 invalid_webhook_url, then 400
 * unknown_event_type (its audit record names the entries).
 */
export function assertSubscription(fields: { url?: string; events?: string[] }): void {
  if (fields.url !== undefined && !isWebhookUrl(fields.url)) throw runsError('invalid_webhook_url');
  const unknown = (fields.events ?? []).filter((entry) => !isSubscribable(entry));
  if (unknown.length > 0) throw runsError('unknown_event_type', { details: { unknown } });
}

/** The inline `webhook` of a run or workflow submit. */
export const InlineWebhook = Joi.object({
  url: webhookUrl().required(),
  events: webhookEvents().required(),
  secret: suppliedSecret().description(
    'Optional: without it deliveries go unsigned (`X-Svc-Signature: none`); with it the key is this string verbatim (secret_origin supplied).',
  ),
})
  .unknown(false)
  .description(
    'A subscription scoped to this one resource: its events alone are delivered to it, independently of the tenant endpoints. Unknown keys: 422. Not counted against max_webhook_endpoints; never listed as an endpoint; its deliveries show endpoint_id null and inline true.',
  )
  .id('InlineWebhook');

/** The inline webhook as its schema accepted it. */
export interface InlineWebhookBody {
  url: string;
  events: string[];
  secret?: string;
}

/**
 * The row an accepted submit stores its inline webhook as (none: null), after the checks past
 * the schema; its endpoint_id is a fresh ULID.
 */
export function inlineWebhookRow(body: InlineWebhookBody | undefined): InlineWebhookRow | null {
  if (body === undefined) return null;
  assertSubscription(body);
  return { endpointId: ulid(), url: body.url, events: body.events, secret: body.secret ?? null };
}
