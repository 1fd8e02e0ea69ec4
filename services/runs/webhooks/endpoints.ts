import { ulid } from '../../../db/ids';
import { auditOf } from '../audit';
import type { KeyPrincipal } from '../../../db/runs/tenants';
import {
  cancelWaitingDeliveries,
  findEndpoint,
  insertDelivery,
  insertEndpoint,
  listEndpoints,
  lockLiveEndpointCount,
  markEndpointDeleted,
  releaseHeldDeliveries,
  updateEndpoint,
  type EndpointChanges,
  type EndpointRow,
} from '../../../db/runs/webhooks';
import type { PlatformDeps } from '../../../platform/deps';
import { generateWebhookSecret } from '../../../platform/webhooks/signing';
import { runsError } from '../errors';
import { TEST_EVENT, matches } from './catalogue';
import { assertSubscription } from './inline';
import { presentEndpoint } from './models';
import { runsQueue, type DeliveryStarter } from './starter';

/**
 * A tenant's webhook endpoints: register, read, change, delete, rotate the secret, send a test.
 * Each change is audited (never with a secret) in the transaction that makes it.
 */

type Deps = Pick<PlatformDeps, 'pool' | 'config'>;

export interface EndpointCreate {
  url: string;
  events: string[];
  secret?: string;
  description?: string | null;
}

/** The PATCH body: a partial merge, at least one field (its schema). */
export interface EndpointPatch {
  url?: string;
  events?: string[];
  description?: string | null;
  active?: boolean;
  secret?: string;
}

const notFound = () => runsError('webhook_not_found');

export const audit = auditOf('webhook');

/**
 * Registers an endpoint, with the secret supplied or a generated one (shown once), unless the
 * tenant already has max_webhook_endpoints live ones (429): counted and inserted under its
 * quota row's lock, so two creations cannot both take the last slot.
 */
export async function createEndpoint(deps: Deps, principal: KeyPrincipal, body: EndpointCreate) {
  assertSubscription(body);
  const secret = body.secret ?? generateWebhookSecret();
  const secretOrigin = body.secret === undefined ? 'generated' : 'supplied';
  const row = await deps.pool.transaction(async (tx) => {
    const { max, live } = await lockLiveEndpointCount(tx, principal.tenantId);
    if (live >= max)
      throw runsError('webhook_quota_exceeded', { details: { max_webhook_endpoints: max } });
    const created = await insertEndpoint(tx, {
      endpointId: ulid(),
      tenantId: principal.tenantId,
      url: body.url,
      events: body.events,
      secret,
      secretOrigin,
      description: body.description ?? null,
    });
    await audit(tx, principal, 'create', created.endpoint_id, {
      url: body.url,
      secret_origin: secretOrigin,
    });
    return created;
  });
  const { endpoint_id, url, events, active, ...rest } = presentEndpoint(row);
  return { endpoint_id, url, events, active, secret, ...rest };
}

export async function listTenantEndpoints(
  deps: Deps,
  tenantId: string,
  page: { limit: number; offset: number },
) {
  const endpoints = await listEndpoints(deps.pool, tenantId, page);
  return { endpoints: endpoints.map(presentEndpoint), limit: page.limit, offset: page.offset };
}

/**
 * The tenant's live endpoint, else 404 (deleted, inline, another tenant's: the same); locked
 * until the commit when asked.
 */
export async function loadEndpoint(
  db: Parameters<typeof findEndpoint>[0],
  tenantId: string,
  endpointId: string,
  lock: Parameters<typeof findEndpoint>[3] = null,
) {
  const endpoint = await findEndpoint(db, tenantId, endpointId, lock);
  if (!endpoint) throw notFound();
  return endpoint;
}

export async function getEndpoint(deps: Deps, tenantId: string, endpointId: string) {
  return presentEndpoint(await loadEndpoint(deps.pool, tenantId, endpointId));
}

/**
 * A partial merge. `active: true` re-enables (disabled_reason cleared, consecutive_failures
 * reset; the dead counters are never cleared) and releases every delivery held while it was
 * disabled, however old, to this process's dispatcher in delivery order after the commit. A
 * supplied secret is answered once, in this response.
 */
export async function patchEndpoint(
  deps: Deps,
  starter: DeliveryStarter,
  principal: KeyPrincipal,
  endpointId: string,
  patch: EndpointPatch,
) {
  assertSubscription(patch);
  const { row, released } = await deps.pool.transaction(async (tx) => {
    const updated = await updateEndpoint(tx, principal.tenantId, endpointId, changesOf(patch));
    if (!updated) throw notFound();
    const released =
      patch.active === true ? await releaseHeldDeliveries(tx, endpointId, runsQueue(deps)) : [];
    await audit(tx, principal, 'update', endpointId, {
      fields: Object.keys(patch),
      released_deliveries: released.length,
    });
    return { row: updated, released };
  });
  for (const delivery of released) starter.dispatch(delivery);
  return {
    ...presentEndpoint(row),
    ...(patch.secret === undefined ? {} : { secret: patch.secret }),
  };
}

export function changesOf(patch: EndpointPatch): EndpointChanges {
  return {
    url: patch.url,
    events: patch.events,
    description: patch.description,
    active: patch.active,
    secret: patch.secret === undefined ? undefined : { value: patch.secret, origin: 'supplied' },
  };
}

/**
 * Deletes an endpoint: it lists and matches no more, and its waiting deliveries (held, pending,
 * retrying) are cancelled in the same transaction; one in flight finds it deleted before its
 * next attempt.
 */
export async function deleteEndpoint(deps: Deps, principal: KeyPrincipal, endpointId: string) {
  await deps.pool.transaction(async (tx) => {
    if (!(await markEndpointDeleted(tx, principal.tenantId, endpointId))) throw notFound();
    const cancelled = await cancelWaitingDeliveries(tx, endpointId);
    await audit(tx, principal, 'delete', endpointId, { cancelled_deliveries: cancelled });
  });
}

/** A new generated secret, shown once; a supplied secret's endpoint becomes generated. */
export async function rotateSecret(deps: Deps, principal: KeyPrincipal, endpointId: string) {
  const secret = generateWebhookSecret();
  await deps.pool.transaction(async (tx) => {
    const changes = { secret: { value: secret, origin: 'generated' as const } };
    if (!(await updateEndpoint(tx, principal.tenantId, endpointId, changes))) throw notFound();
    await audit(tx, principal, 'rotate_secret', endpointId);
  });
  return { endpoint_id: endpointId, secret, secret_origin: 'generated' as const };
}

/**
 * A test delivery: a pending delivery marked `test`, of a fresh event of `eventType`
 * (webhook.test, or a type the endpoint subscribes to: else 422), to an active endpoint (else
 * 409 endpoint_disabled), started after the commit. The envelope has no `delivery` block: each
 * attempt adds its own.
 */
export async function sendTestDelivery(
  deps: Deps,
  starter: DeliveryStarter,
  principal: KeyPrincipal,
  endpointId: string,
  eventType: string,
) {
  const { tenantId } = principal;
  const deliveryId = await deps.pool.transaction(async (tx) => {
    // Locked until the commit: a DELETE meanwhile cancels this delivery instead of missing it.
    const endpoint = await loadEndpoint(tx, tenantId, endpointId, 'share');
    assertTestable(endpoint, eventType);
    const eventId = ulid();
    const envelope = testEnvelope({ eventId, eventType, tenantId, endpointId, at: new Date() });
    const id = await insertDelivery(tx, {
      tenantId,
      endpointId,
      eventId,
      eventType,
      envelope,
      test: true,
      taskQueue: runsQueue(deps),
    });
    await audit(tx, principal, 'test', endpointId, {
      delivery_id: Number(id),
      event_type: eventType,
    });
    return id;
  });
  starter.dispatch({ deliveryId, tenantId, endpointId, eventType });
  return { delivery_id: Number(deliveryId), event_type: eventType };
}

/** 422 for a type the endpoint does not subscribe to, then 409 for a disabled endpoint. */
function assertTestable(endpoint: EndpointRow, eventType: string): void {
  if (eventType !== TEST_EVENT && !matches(endpoint.events, eventType))
    throw runsError('event_type_not_subscribed', { details: { event_type: eventType } });
  assertActive(endpoint);
}

/** 409 endpoint_disabled, with its reason, for an endpoint that is not active. */
export function assertActive(endpoint: EndpointRow): void {
  if (!endpoint.active)
    throw runsError('endpoint_disabled', {
      details: { disabled_reason: endpoint.disabled_reason },
    });
}

/** The signed body of a test delivery, but its per-attempt `delivery` block. */
export function testEnvelope(e: {
  eventId: string;
  eventType: string;
  tenantId: string;
  endpointId: string;
  at: Date;
}): Record<string, unknown> {
  return {
    event_id: e.eventId,
    event_type: e.eventType,
    occurred_at: e.at.toISOString(),
    tenant_id: e.tenantId,
    resource: { type: 'webhook', id: e.endpointId },
    data: {},
    test: true,
    truncated: false,
  };
}
