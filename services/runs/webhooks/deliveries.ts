import type { KeyPrincipal } from '../../../db/runs/tenants';
import {
  TERMINAL_DELIVERY_STATES,
  findDelivery,
  insertRecoveries,
  insertRedeliveries,
  listAttempts,
  listDeliveries,
  type DeliveryFilter,
  type DeliveryScope,
  type RecoverWindow,
} from '../../../db/runs/webhooks';
import { findWorkflowRow } from '../../../db/runs/workflows';
import type { PlatformDeps } from '../../../platform/deps';
import { runsError } from '../errors';
import { loadRun } from '../reads';
import { assertActive, audit, loadEndpoint } from './endpoints';
import { presentAttempt, presentDelivery } from './models';
import { runsQueue, type DeliveryStarter } from './starter';

/**
 * Reads of deliveries (per endpoint, run, workflow, and one with its attempts), redelivery of
 * one, and recovery of every event an endpoint never received.
 * Every read is the tenant's alone: another tenant's endpoint, run, workflow or delivery is 404,
 * whatever its id.
 */

type Deps = Pick<PlatformDeps, 'pool' | 'config'>;

const deliveryNotFound = () => runsError('delivery_not_found');

async function listScoped(
  deps: Deps,
  tenantId: string,
  scope: DeliveryScope,
  filter: DeliveryFilter,
) {
  const deliveries = await listDeliveries(deps.pool, tenantId, scope, filter);
  return { deliveries: deliveries.map(presentDelivery) };
}

/** A live endpoint's deliveries (404 webhook_not_found for one deleted, inline, not the tenant's). */
export async function listEndpointDeliveries(
  deps: Deps,
  tenantId: string,
  endpointId: string,
  filter: DeliveryFilter,
) {
  await loadEndpoint(deps.pool, tenantId, endpointId);
  return listScoped(deps, tenantId, { endpointId }, filter);
}

/** Every delivery of an event of the run: its endpoints' and its inline webhook's. */
export async function listRunDeliveries(
  deps: PlatformDeps,
  tenantId: string,
  trackId: string,
  filter: DeliveryFilter,
) {
  await loadRun(deps, tenantId, trackId);
  return listScoped(deps, tenantId, { trackId }, filter);
}

/** Every delivery of an event of the workflow, its nodes' and their runs' included. */
export async function listWorkflowDeliveries(
  deps: Deps,
  tenantId: string,
  workflowId: string,
  filter: DeliveryFilter,
) {
  if (!(await findWorkflowRow(deps.pool, tenantId, workflowId)))
    throw runsError('workflow_not_found');
  return listScoped(deps, tenantId, { workflowId }, filter);
}

/** One delivery with its attempts. */
export async function getDelivery(deps: Deps, tenantId: string, deliveryId: string) {
  const delivery = await findDelivery(deps.pool, tenantId, deliveryId);
  if (!delivery) throw deliveryNotFound();
  const attempts = await listAttempts(deps.pool, deliveryId);
  return { ...presentDelivery(delivery), attempt_log: attempts.map(presentAttempt) };
}

/**
 * A new delivery of a terminal one's event (same event_id and envelope) to the same endpoint,
 * which must still exist (409 endpoint_deleted); only from delivered, dead or cancelled (409
 * delivery_not_terminal). Pending and started after the commit; held instead while the endpoint
 * is disabled (delivered when it is re-enabled).
 */
export async function redeliver(
  deps: Deps,
  starter: DeliveryStarter,
  principal: KeyPrincipal,
  deliveryId: string,
) {
  const { tenantId } = principal;
  const made = await deps.pool.transaction(async (tx) => {
    // Its endpoint locked until the commit: a DELETE meanwhile cancels the new row.
    const original = await findDelivery(tx, tenantId, deliveryId, true);
    if (!original) throw deliveryNotFound();
    if (!TERMINAL_DELIVERY_STATES.includes(original.state))
      throw runsError('delivery_not_terminal', { details: { state: original.state } });
    if (original.endpoint_deleted) throw runsError('endpoint_deleted');
    const state = original.endpoint_active ? ('pending' as const) : ('held' as const);
    const [copy] = await insertRedeliveries(tx, [deliveryId], state, runsQueue(deps));
    const id = copy!.deliveryId;
    await audit(tx, principal, 'redeliver', original.endpoint_id, {
      delivery_id: Number(id),
      redelivery_of: Number(deliveryId),
      state,
    });
    return { id, state, endpointId: original.endpoint_id };
  });
  if (made.state === 'pending')
    starter.dispatch({ deliveryId: made.id, tenantId, endpointId: made.endpointId });
  return { delivery_id: Number(made.id), state: made.state };
}

/**
 * Re-sends, in event order, every event of the endpoint made in the window that it never
 * received (each of its deliveries dead), as one new delivery each (insertRecoveries), sent from
 * this process after the commit. The endpoint must be active (409 endpoint_disabled: re-enabling
 * releases what was held for it); it is locked until the commit, so two recovers never both
 * re-send one event.
 */
export async function recoverEndpoint(
  deps: Deps,
  starter: DeliveryStarter,
  principal: KeyPrincipal,
  endpointId: string,
  window: RecoverWindow,
) {
  const { tenantId } = principal;
  const { made, more } = await deps.pool.transaction(async (tx) => {
    assertActive(await loadEndpoint(tx, tenantId, endpointId, 'update'));
    const recovered = await insertRecoveries(tx, endpointId, window, runsQueue(deps));
    await audit(tx, principal, 'recover', endpointId, {
      since: window.since,
      until: window.until,
      recovered: recovered.made.length,
    });
    return recovered;
  });
  for (const delivery of made) starter.dispatch(delivery);
  const id = (index: number) => (made.length === 0 ? null : Number(made.at(index)!.deliveryId));
  return { recovered: made.length, first_delivery_id: id(0), last_delivery_id: id(-1), more };
}
