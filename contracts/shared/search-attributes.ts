import {
  defineSearchAttributeKey,
  SearchAttributeType,
  type SearchAttributePair,
} from '@temporalio/common';

/**
 * Search attributes on every execution, so an operator finds it in the Web UI by tenant and
 * service. Registered by scripts/stack (see scripts/search-attributes.txt) and by compose.
 */
export const TENANT_ID = defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD);
export const SERVICE = defineSearchAttributeKey('Service', SearchAttributeType.KEYWORD);
export const RUN_STATE = defineSearchAttributeKey('RunState', SearchAttributeType.KEYWORD);
/** The webhook endpoint a delivery workflow delivers to. */
export const WEBHOOK_ENDPOINT = defineSearchAttributeKey(
  'WebhookEndpoint',
  SearchAttributeType.KEYWORD,
);
/** A DAG workflow's state (pending, running, paused, succeeded, failed, cancelled). */
export const DAG_STATE = defineSearchAttributeKey('DagState', SearchAttributeType.KEYWORD);
/**
 * A webhook delivery's end (delivered, dead), upserted by its workflow when it ends (patch
 * delivery-state); absent while it is attempted.
 */
export const DELIVERY_STATE = defineSearchAttributeKey(
  'DeliveryState',
  SearchAttributeType.KEYWORD,
);
/** A ledger hold's expires_at, set at its start: "holds past their expiry" is one query. */
export const HOLD_EXPIRES_AT = defineSearchAttributeKey(
  'HoldExpiresAt',
  SearchAttributeType.DATETIME,
);

export type ServiceName = 'ledger' | 'runs' | 'quota';

export function executionSearchAttributes(
  tenantId: string,
  service: ServiceName,
): SearchAttributePair[] {
  return [
    { key: TENANT_ID, value: tenantId },
    { key: SERVICE, value: service },
  ];
}
