import { ulid } from '../../db/ids';
import type { Redis } from '../../db/redis';
import type { DatabasePool } from '../../db/pool';
import {
  beginQuotaAttempt,
  deleteEndpoint,
  endpointInUse,
  findEndpoint,
  insertDelivery,
  insertEndpoint,
  listDeliveries,
  listEndpoints,
  recordDeliveryOutcome,
  recordQuotaAttempt,
  updateEndpoint,
  type DeliveryRow,
  type EndpointChanges,
  type WebhookEndpointRow,
} from '../../db/quota/webhooks';
import { platformVersion } from '../../db/repository';
import type { Config } from '../../platform/config';
import { createWebhookSender, type WebhookSender } from '../../platform/webhooks/http-delivery';
import {
  finalOutcome,
  nextAttemptAt,
  type AttemptInput,
  type Send,
} from '../../platform/webhooks/attempts';
import type { AttemptVerdict } from '../../contracts/shared/delivery';
import {
  newStandardSecret,
  standardWebhookHeaders,
} from '../../platform/webhooks/standard-signing';
import { audited } from './catalogue';
import type { Principal } from './credentials';
import { quotaError } from './errors';
import { tenantOf } from './keys';

/**
 * A tenant's webhook endpoints and what was delivered to them. Every message is signed by the
 * Standard Webhooks scheme with the endpoint's secret (shown once, at creation) and sent by the
 * platform's egress-safe sender. Changes are audited (webhook_endpoint.create|update|delete,
 * never with the secret).
 */

type Deps = { pool: DatabasePool; redis: Redis; config: Config };

/** The event types an endpoint may subscribe to (webhook.test is sent by the test route only). */
export const QUOTA_EVENT_TYPES = ['alert.triggered'] as const;
export const TEST_EVENT_TYPE = 'webhook.test';

export interface EndpointCreate {
  url: string;
  description: string;
  event_types: string[];
  enabled: boolean;
}
export type EndpointPatch = { [K in keyof EndpointCreate]?: EndpointCreate[K] | null };

const notFound = () => quotaError('webhook_endpoint_not_found');

const senders = new WeakMap<Config, WebhookSender>();
/** One sender per configuration (it reads the CA file once). */
function senderOf(config: Config): WebhookSender {
  let sender = senders.get(config);
  if (!sender) {
    sender = createWebhookSender({
      egressAllow: config.webhooks.egressAllow,
      caFile: config.webhooks.caFile,
      timeoutMs: config.webhooks.attemptTimeoutMs,
    });
    senders.set(config, sender);
  }
  return sender;
}

/** A message as sent: the body (`{type, timestamp, data}`) and its signed headers. */
export function signedMessage(
  secret: string,
  messageId: string,
  payload: Record<string, unknown>,
): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify(payload);
  return {
    body,
    headers: {
      'Content-Type': 'application/json',
      'User-Agent': `Svc/${platformVersion()}`,
      ...standardWebhookHeaders(secret, messageId, body),
    },
  };
}

/**
 * One attempt of a quota delivery, from the delivery workflow's activity: marks it delivering,
 * signs it by the Standard Webhooks scheme at attempt time, sends it and records the outcome.
 */
export async function sendAndRecordQuotaAttempt(
  deps: { pool: DatabasePool; send: Send },
  input: AttemptInput,
): Promise<AttemptVerdict> {
  const target = await beginQuotaAttempt(deps.pool, input.deliveryId, input.attempt);
  if (target === null) return 'ended';
  const sent = await deps.send({
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

export async function createEndpoint(deps: Deps, principal: Principal, input: EndpointCreate) {
  const secret = newStandardSecret();
  const row = await audited(deps, principal, 'webhook_endpoint', 'create', async (tx, tenantId) => {
    const created = await insertEndpoint(tx, {
      id: `whe_${ulid()}`,
      tenantId,
      url: input.url,
      description: input.description,
      eventTypes: input.event_types,
      enabled: input.enabled,
      secret,
    });
    return { id: created.id, before: null, after: created };
  });
  return { ...row, secret };
}

export const listTenantEndpoints = (deps: Deps, principal: Principal) =>
  listEndpoints(deps.pool, tenantOf(principal));

export async function getEndpoint(
  deps: Deps,
  principal: Principal,
  id: string,
): Promise<WebhookEndpointRow> {
  const row = await findEndpoint(deps.pool, tenantOf(principal), id);
  if (!row) throw notFound();
  const { secret: _secret, ...shown } = row;
  return shown;
}

/** A partial merge: null or absent leaves a field as it is. */
export function patchEndpoint(deps: Deps, principal: Principal, id: string, patch: EndpointPatch) {
  const changes: EndpointChanges = {
    url: patch.url ?? undefined,
    description: patch.description ?? undefined,
    eventTypes: patch.event_types ?? undefined,
    enabled: patch.enabled ?? undefined,
  };
  return audited(deps, principal, 'webhook_endpoint', 'update', async (tx, tenantId) => {
    const found = await findEndpoint(tx, tenantId, id, true);
    if (!found) throw notFound();
    const { secret: _secret, ...before } = found;
    return { id, before, after: await updateEndpoint(tx, id, changes) };
  });
}

/** 409 in_use while an alert rule names it; else gone, its unfinished deliveries cancelled. */
export async function removeEndpoint(deps: Deps, principal: Principal, id: string) {
  await audited(deps, principal, 'webhook_endpoint', 'delete', async (tx, tenantId) => {
    const found = await findEndpoint(tx, tenantId, id, true);
    if (!found) throw notFound();
    if (await endpointInUse(tx, id)) throw quotaError('in_use');
    await deleteEndpoint(tx, id);
    const { secret: _secret, ...before } = found;
    return { id, before, after: null };
  });
}

/**
 * Sends a signed webhook.test now and answers what the receiver did: recorded as a delivery of
 * one attempt (delivered or dead), outside the retrying engine.
 */
export async function testEndpoint(deps: Deps, principal: Principal, id: string) {
  const tenantId = tenantOf(principal);
  const endpoint = await findEndpoint(deps.pool, tenantId, id);
  if (!endpoint) throw notFound();
  const deliveryId = `whd_${ulid()}`;
  const messageId = `msg_${ulid()}`;
  const payload = {
    type: TEST_EVENT_TYPE,
    timestamp: new Date().toISOString(),
    data: { endpoint_id: endpoint.id, tenant_id: tenantId },
  };
  await insertDelivery(deps.pool, {
    id: deliveryId,
    tenantId,
    endpointId: endpoint.id,
    alertEventId: null,
    eventType: TEST_EVENT_TYPE,
    messageId,
    payload,
    status: 'delivering',
    attemptCount: 1,
  });
  const sent = await senderOf(deps.config).send({
    url: endpoint.url,
    ...signedMessage(endpoint.secret, messageId, payload),
  });
  const delivered = sent.verdict === 'delivered';
  const error = delivered ? null : sent.error;
  await recordDeliveryOutcome(deps.pool, deliveryId, {
    status: delivered ? 'delivered' : 'dead',
    statusCode: sent.status,
    error,
  });
  return {
    delivery_id: deliveryId,
    delivered,
    status_code: sent.status,
    latency_ms: Math.round(sent.durationMs),
    error,
  };
}

export const listTenantDeliveries = (
  deps: Deps,
  principal: Principal,
  filter: { endpointId: string | null; limit: number },
): Promise<readonly DeliveryRow[]> => listDeliveries(deps.pool, tenantOf(principal), filter);
