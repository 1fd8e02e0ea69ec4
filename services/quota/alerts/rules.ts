import { ulid } from '../../../db/ids';
import type { Redis } from '../../../db/redis';
import type { DatabasePool } from '../../../db/pool';
import {
  deleteAlertRule,
  findAlertRule,
  insertAlertRule,
  listAlertRules,
  updateAlertRule,
  type AlertRuleRow,
  type AlertRuleValues,
} from '../../../db/quota/alert-rules';
import { policies, resources } from '../../../db/quota/catalogue';
import type { Queryable } from '../../../db/quota/queryable';
import { existingEndpoints } from '../../../db/quota/webhooks';
import { audited } from '../catalogue';
import type { Principal } from '../credentials';
import { bodyRefusal, quotaError, referenceNotFound } from '../errors';
import { tenantOf } from '../keys';

/**
 * A tenant's alert rules: when a subject's usage of a policy window crosses threshold_pct of its
 * limit, an alert event is recorded and its channels notified. A rule names what it watches (a
 * policy, a resource's policies, subjects by subject_filter; null is any) and its channels
 * (webhook endpoints of the tenant, e-mail addresses). Changes are audited (alert_rule.*).
 */

type Deps = { pool: DatabasePool; redis: Redis };

export interface AlertChannelsIn {
  webhooks: string[];
  emails: string[];
}

export interface AlertRuleCreate {
  name: string;
  policy_id: string | null;
  resource_id: string | null;
  subject_filter: string | null;
  threshold_pct: number;
  channels: AlertChannelsIn;
  cooldown_seconds: number;
  enabled: boolean;
}

/** Only these may change (the spec's AlertRulePatch); null or absent leaves one as it is. */
export type AlertRulePatch = {
  [K in 'name' | 'threshold_pct' | 'channels' | 'cooldown_seconds' | 'enabled']?:
    AlertRuleCreate[K] | null;
};

export const alertRuleOut = (row: AlertRuleRow) => ({
  id: row.id,
  name: row.name,
  policy_id: row.policy_id,
  resource_id: row.resource_id,
  subject_filter: row.subject_filter,
  threshold_pct: row.threshold_pct,
  channels: { webhooks: row.webhook_endpoint_ids, emails: row.emails },
  cooldown_seconds: row.cooldown_seconds,
  enabled: row.enabled,
  created_at: row.created_at,
});

const notFound = () => quotaError('alert_rule_not_found');

/** 422 at the field for an id the tenant lacks, or a policy that is not on the rule's resource. */
async function checkReferences(
  tx: Queryable,
  tenantId: string,
  rule: Pick<AlertRuleCreate, 'policy_id' | 'resource_id'> & { channels?: AlertChannelsIn },
): Promise<void> {
  const policy = rule.policy_id ? await policies.find(tx, tenantId, rule.policy_id) : null;
  if (rule.policy_id && !policy) throw referenceNotFound(['policy_id'], 'policy');
  if (rule.resource_id && !(await resources.find(tx, tenantId, rule.resource_id)))
    throw referenceNotFound(['resource_id'], 'resource');
  if (policy && rule.resource_id && policy.resource_id !== rule.resource_id)
    throw bodyRefusal([
      {
        path: ['policy_id'],
        message: 'the policy is not on resource_id',
        type: 'policy_resource_mismatch',
      },
    ]);
  const webhooks = rule.channels?.webhooks ?? [];
  const live = new Set(await existingEndpoints(tx, tenantId, webhooks));
  const missing = webhooks.findIndex((id) => !live.has(id));
  if (missing >= 0) throw referenceNotFound(['channels', 'webhooks', missing], 'webhook endpoint');
}

const valuesOf = (rule: AlertRuleCreate): AlertRuleValues => ({
  name: rule.name,
  policyId: rule.policy_id,
  resourceId: rule.resource_id,
  subjectFilter: rule.subject_filter,
  thresholdPct: rule.threshold_pct,
  webhookEndpointIds: rule.channels.webhooks,
  emails: rule.channels.emails,
  cooldownSeconds: rule.cooldown_seconds,
  enabled: rule.enabled,
});

export function createAlertRule(deps: Deps, principal: Principal, input: AlertRuleCreate) {
  return audited(deps, principal, 'alert_rule', 'create', async (tx, tenantId) => {
    await checkReferences(tx, tenantId, input);
    const row = await insertAlertRule(tx, `alr_${ulid()}`, tenantId, valuesOf(input));
    return { id: row.id, before: null, after: alertRuleOut(row) };
  });
}

export const listTenantAlertRules = async (deps: Deps, principal: Principal) =>
  (await listAlertRules(deps.pool, tenantOf(principal))).map(alertRuleOut);

export async function getAlertRule(deps: Deps, principal: Principal, id: string) {
  const row = await findAlertRule(deps.pool, tenantOf(principal), id);
  if (!row) throw notFound();
  return alertRuleOut(row);
}

export function patchAlertRule(
  deps: Deps,
  principal: Principal,
  id: string,
  patch: AlertRulePatch,
) {
  return audited(deps, principal, 'alert_rule', 'update', async (tx, tenantId) => {
    const row = await findAlertRule(tx, tenantId, id, true);
    if (!row) throw notFound();
    const before = alertRuleOut(row);
    const merged: AlertRuleCreate = {
      ...before,
      name: patch.name ?? before.name,
      threshold_pct: patch.threshold_pct ?? before.threshold_pct,
      channels: patch.channels ?? before.channels,
      cooldown_seconds: patch.cooldown_seconds ?? before.cooldown_seconds,
      enabled: patch.enabled ?? before.enabled,
    };
    if (patch.channels)
      await checkReferences(tx, tenantId, { ...merged, policy_id: null, resource_id: null });
    const after = alertRuleOut(await updateAlertRule(tx, id, valuesOf(merged)));
    return { id, before, after };
  });
}

export async function removeAlertRule(deps: Deps, principal: Principal, id: string) {
  await audited(deps, principal, 'alert_rule', 'delete', async (tx, tenantId) => {
    const row = await findAlertRule(tx, tenantId, id, true);
    if (!row) throw notFound();
    await deleteAlertRule(tx, id);
    return { id, before: alertRuleOut(row), after: null };
  });
}
