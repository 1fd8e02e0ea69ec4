import { z } from 'zod';
import { sql } from '../pool';
import type { Queryable } from './queryable';

/** Alert rules of the quota service (migration quota/0004). */

export const alertRuleRow = z.object({
  id: z.string(),
  name: z.string(),
  policy_id: z.string().nullable(),
  resource_id: z.string().nullable(),
  subject_filter: z.string().nullable(),
  threshold_pct: z.number(),
  webhook_endpoint_ids: z.array(z.string()),
  emails: z.array(z.string()),
  cooldown_seconds: z.number(),
  enabled: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type AlertRuleRow = z.infer<typeof alertRuleRow>;

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
  return db.one(sql.type(alertRuleRow)`
    INSERT INTO quota.alert_rules (id, tenant_id, name, policy_id, resource_id, subject_filter,
                                   threshold_pct, webhook_endpoint_ids, emails, cooldown_seconds,
                                   enabled)
    VALUES (${id}, ${tenantId}, ${r.name}, ${r.policyId}, ${r.resourceId}, ${r.subjectFilter},
            ${r.thresholdPct}, ${sql.array(r.webhookEndpointIds, 'text')},
            ${sql.array(r.emails, 'text')}, ${r.cooldownSeconds}, ${r.enabled})
    RETURNING ${RULE}`);
}

export async function findAlertRule(
  db: Queryable,
  tenantId: string,
  id: string,
  lock = false,
): Promise<AlertRuleRow | null> {
  return db.maybeOne(sql.type(alertRuleRow)`
    SELECT ${RULE} FROM quota.alert_rules WHERE tenant_id = ${tenantId} AND id = ${id}
    ${lock ? sql.fragment`FOR UPDATE` : sql.fragment``}`);
}

export async function listAlertRules(
  db: Queryable,
  tenantId: string,
): Promise<readonly AlertRuleRow[]> {
  return db.any(sql.type(alertRuleRow)`
    SELECT ${RULE} FROM quota.alert_rules WHERE tenant_id = ${tenantId}
    ORDER BY created_at, id`);
}

/** Replaces the rule's values (a PATCH merged over the row). */
export async function updateAlertRule(
  db: Queryable,
  id: string,
  r: AlertRuleValues,
): Promise<AlertRuleRow> {
  return db.one(sql.type(alertRuleRow)`
    UPDATE quota.alert_rules
    SET name = ${r.name}, threshold_pct = ${r.thresholdPct},
        webhook_endpoint_ids = ${sql.array(r.webhookEndpointIds, 'text')},
        emails = ${sql.array(r.emails, 'text')}, cooldown_seconds = ${r.cooldownSeconds},
        enabled = ${r.enabled}, updated_at = now()
    WHERE id = ${id} RETURNING ${RULE}`);
}

export async function deleteAlertRule(db: Queryable, id: string): Promise<void> {
  await db.query(sql.unsafe`DELETE FROM quota.alert_rules WHERE id = ${id}`);
}

const ruleRecipientRow = z.object({
  rule_id: z.string(),
  rule_name: z.string(),
  emails: z.array(z.string()),
  endpoint_ids: z.array(z.string()),
});
export type RuleRecipientRow = z.infer<typeof ruleRecipientRow>;

/** Whom these rules notify of `eventType`: each rule's name, e-mails and live, enabled endpoints. */
export async function ruleRecipients(
  db: Queryable,
  ruleIds: string[],
  eventType: string,
): Promise<readonly RuleRecipientRow[]> {
  return db.any(sql.type(ruleRecipientRow)`
    SELECT r.id AS rule_id, r.name AS rule_name, r.emails,
           COALESCE(array_agg(e.id ORDER BY e.id) FILTER (WHERE e.id IS NOT NULL), '{}') AS endpoint_ids
    FROM quota.alert_rules r
    LEFT JOIN quota.webhook_endpoints e ON e.id = ANY(r.webhook_endpoint_ids)
      AND e.deleted_at IS NULL AND e.enabled AND ${eventType} = ANY(e.event_types)
    WHERE r.id = ANY(${sql.array(ruleIds, 'text')})
    GROUP BY r.id
    ORDER BY r.id`);
}
