import { sql } from '../pool';
import type { Queryable } from './queryable';

/** Alert rules of the quota service (migration quota/0004). */

export interface AlertRuleRow {
  id: string;
  name: string;
  policy_id: string | null;
  resource_id: string | null;
  subject_filter: string | null;
  threshold_pct: number;
  webhook_endpoint_ids: string[];
  emails: string[];
  cooldown_seconds: number;
  enabled: boolean;
  created_at: string;
  updated_at: string;
}

const RULE = sql.fragment`id, name, policy_id, resource_id, subject_filter, threshold_pct,
  webhook_endpoint_ids, emails, cooldown_seconds, enabled, created_at, updated_at`;

export interface AlertRuleValues {
  name: string;
  policyId: string | null;
  resourceId: string | null;
  subjectFilter: string | null;
  thresholdPct: number;
  webhookEndpointIds: string[];
  emails: string[];
  cooldownSeconds: number;
  enabled: boolean;
}

export async function insertAlertRule(
  db: Queryable,
  id: string,
  tenantId: string,
  r: AlertRuleValues,
): Promise<AlertRuleRow> {
  return (await db.one(sql.unsafe`
    INSERT INTO quota.alert_rules (id, tenant_id, name, policy_id, resource_id, subject_filter,
                                   threshold_pct, webhook_endpoint_ids, emails, cooldown_seconds,
                                   enabled)
    VALUES (${id}, ${tenantId}, ${r.name}, ${r.policyId}, ${r.resourceId}, ${r.subjectFilter},
            ${r.thresholdPct}, ${sql.array(r.webhookEndpointIds, 'text')},
            ${sql.array(r.emails, 'text')}, ${r.cooldownSeconds}, ${r.enabled})
    RETURNING ${RULE}`)) as AlertRuleRow;
}

export async function findAlertRule(
  db: Queryable,
  tenantId: string,
  id: string,
  lock = false,
): Promise<AlertRuleRow | null> {
  return (await db.maybeOne(sql.unsafe`
    SELECT ${RULE} FROM quota.alert_rules WHERE tenant_id = ${tenantId} AND id = ${id}
    ${lock ? sql.fragment`FOR UPDATE` : sql.fragment``}`)) as AlertRuleRow | null;
}

export async function listAlertRules(db: Queryable, tenantId: string): Promise<AlertRuleRow[]> {
  return (await db.any(sql.unsafe`
    SELECT ${RULE} FROM quota.alert_rules WHERE tenant_id = ${tenantId}
    ORDER BY created_at, id`)) as AlertRuleRow[];
}

/** Replaces the rule's values (a PATCH merged over the row). */
export async function updateAlertRule(
  db: Queryable,
  id: string,
  r: AlertRuleValues,
): Promise<AlertRuleRow> {
  return (await db.one(sql.unsafe`
    UPDATE quota.alert_rules
    SET name = ${r.name}, threshold_pct = ${r.thresholdPct},
        webhook_endpoint_ids = ${sql.array(r.webhookEndpointIds, 'text')},
        emails = ${sql.array(r.emails, 'text')}, cooldown_seconds = ${r.cooldownSeconds},
        enabled = ${r.enabled}, updated_at = now()
    WHERE id = ${id} RETURNING ${RULE}`)) as AlertRuleRow;
}

export async function deleteAlertRule(db: Queryable, id: string): Promise<void> {
  await db.query(sql.unsafe`DELETE FROM quota.alert_rules WHERE id = ${id}`);
}

/** Whom these rules notify of `eventType`: each rule's name, e-mails and live, enabled endpoints. */
export async function ruleRecipients(
  db: Queryable,
  ruleIds: string[],
  eventType: string,
): Promise<{ rule_id: string; rule_name: string; emails: string[]; endpoint_ids: string[] }[]> {
  return (await db.any(sql.unsafe`
    SELECT r.id AS rule_id, r.name AS rule_name, r.emails,
           COALESCE(array_agg(e.id ORDER BY e.id) FILTER (WHERE e.id IS NOT NULL), '{}') AS endpoint_ids
    FROM quota.alert_rules r
    LEFT JOIN quota.webhook_endpoints e ON e.id = ANY(r.webhook_endpoint_ids)
      AND e.deleted_at IS NULL AND e.enabled AND ${eventType} = ANY(e.event_types)
    WHERE r.id = ANY(${sql.array(ruleIds, 'text')})
    GROUP BY r.id
    ORDER BY r.id`)) as {
    rule_id: string;
    rule_name: string;
    emails: string[];
    endpoint_ids: string[];
  }[];
}
