import Joi from 'joi';
import {
  DELIVERY_STATES,
  type AttemptRow,
  type DeliveryRow,
  type EndpointRow,
} from '../../../db/runs/webhooks';
import { instant, integer, model, nullableInstant, nullableText, text, ulid } from '../models';

/** The response models of the webhook operations, and the rows presented as them. */

const deliveryId = () => integer().min(1);

const endpointFields = {
  endpoint_id: ulid(),
  url: text(),
  events: Joi.array().items(text()),
  active: Joi.boolean(),
  secret_origin: Joi.string()
    .valid('generated', 'supplied', 'unknown')
    .description(
      'generated: the signing key is the 32 bytes the 64 hex characters encode; supplied: the secret string verbatim; unknown: registered before provenance was recorded (verbatim).',
    ),
  description: nullableText(),
  disabled_reason: nullableText().description(
    'null while active; `disabled_by_tenant` (PATCH active: false) or `dead_without_success_24h` (disabled by the delivery engine).',
  ),
  consecutive_failures: integer().min(0).description('Informational; reset by PATCH active: true.'),
  dead_deliveries_total: integer()
    .min(0)
    .description('Never cleared, by a success or a re-activation.'),
  last_dead_delivery_at: nullableInstant().description('Never cleared.'),
  created_at: instant(),
  updated_at: instant(),
};

export const WebhookEndpoint = model('WebhookEndpoint', endpointFields).description(
  'Never carries the secret.',
);

export const CreatedWebhookEndpoint = model('CreatedWebhookEndpoint', {
  ...endpointFields,
  secret: text().description('Shown this once: never in a list or a read.'),
});

export const UpdatedWebhookEndpoint = model('UpdatedWebhookEndpoint', {
  ...endpointFields,
  secret: text()
    .optional()
    .description('Present only when this PATCH supplied a secret: shown this once.'),
});

export const WebhookEndpointList = model('WebhookEndpointList', {
  endpoints: Joi.array().items(WebhookEndpoint).description('Oldest first.'),
  limit: integer(),
  offset: integer(),
});

export const RotatedWebhookSecret = model('RotatedWebhookSecret', {
  endpoint_id: ulid(),
  secret: text().description('64 hex characters, shown this once.'),
  secret_origin: Joi.string().valid('generated'),
});

export const WebhookTestAccepted = model('WebhookTestAccepted', {
  delivery_id: deliveryId(),
  event_type: text(),
});

export const WebhookRedeliveryAccepted = model('WebhookRedeliveryAccepted', {
  delivery_id: deliveryId(),
  state: Joi.string()
    .valid('pending', 'held')
    .description('held while the endpoint is disabled: delivered when it is re-enabled.'),
});

export const WebhookRecoverAccepted = model('WebhookRecoverAccepted', {
  recovered: integer()
    .min(0)
    .description('How many events were re-sent, each as one new pending delivery.'),
  first_delivery_id: deliveryId()
    .allow(null)
    .description('The first new delivery (the earliest event); null when none was re-sent.'),
  last_delivery_id: deliveryId().allow(null),
  more: Joi.boolean().description(
    'true: the window holds more such events than limit; the same call again re-sends the next ones.',
  ),
});

const deliveryFields = {
  delivery_id: deliveryId(),
  endpoint_id: ulid().allow(null).description('null for the inline webhook of a run or workflow.'),
  inline: Joi.boolean(),
  event_id: ulid().description('The event: the same on every attempt and every redelivery.'),
  event_type: text(),
  track_id: ulid().allow(null).description('The run the event concerns; null for none.'),
  workflow_id: ulid().allow(null).description('The workflow the event concerns; null for none.'),
  state: Joi.string().valid(...DELIVERY_STATES),
  attempts: integer().min(0),
  next_attempt_at: nullableInstant().description('While retrying: when the next attempt is due.'),
  last_status_code: integer().allow(null),
  last_error: nullableText().description("The last attempt's failure."),
  test: Joi.boolean(),
  truncated: Joi.boolean(),
  redelivery_of: deliveryId().allow(null),
  created_at: instant(),
  updated_at: instant(),
  finished_at: nullableInstant(),
};

export const WebhookDelivery = model('WebhookDelivery', deliveryFields);

export const WebhookAttempt = model('WebhookAttempt', {
  attempt: integer().min(1),
  started_at: instant(),
  finished_at: instant(),
  status_code: integer().allow(null),
  error: nullableText(),
  outcome: Joi.string().valid('delivered', 'retry', 'dead'),
});

export const WebhookDeliveryDetail = model('WebhookDeliveryDetail', {
  ...deliveryFields,
  attempt_log: Joi.array().items(WebhookAttempt).description('First attempt first.'),
});

export const WebhookDeliveryList = model('WebhookDeliveryList', {
  deliveries: Joi.array()
    .items(WebhookDelivery)
    .description('Ascending delivery_id: page forward with since=<the last one>.'),
});

/**
 * An endpoint as answered. Its counter is int8 in Postgres and a JSON integer here: a count of
 * deliveries cannot pass 2^53.
 */
export const presentEndpoint = (e: EndpointRow) => ({
  endpoint_id: e.endpoint_id,
  url: e.url,
  events: e.events,
  active: e.active,
  secret_origin: e.secret_origin,
  description: e.description,
  disabled_reason: e.disabled_reason,
  consecutive_failures: e.consecutive_failures,
  dead_deliveries_total: Number(e.dead_deliveries_total),
  last_dead_delivery_at: e.last_dead_delivery_at,
  created_at: e.created_at,
  updated_at: e.updated_at,
});

/** A delivery as answered: its ids as JSON integers (an identity column never nears 2^53). */
export const presentDelivery = (d: DeliveryRow) => ({
  delivery_id: Number(d.delivery_id),
  endpoint_id: d.inline ? null : d.endpoint_id,
  inline: d.inline,
  event_id: d.event_id,
  event_type: d.event_type,
  track_id: d.track_id,
  workflow_id: d.workflow_id,
  state: d.state,
  attempts: d.attempts,
  next_attempt_at: d.next_attempt_at,
  last_status_code: d.last_status_code,
  last_error: d.last_error,
  test: d.test,
  truncated: d.truncated,
  redelivery_of: d.redelivery_of === null ? null : Number(d.redelivery_of),
  created_at: d.created_at,
  updated_at: d.updated_at,
  finished_at: d.finished_at,
});

export const presentAttempt = (a: AttemptRow) => ({
  attempt: a.attempt,
  started_at: a.started_at,
  finished_at: a.finished_at,
  status_code: a.status_code,
  error: a.error,
  outcome: a.outcome,
});
