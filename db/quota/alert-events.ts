import { z } from 'zod';
import { sql } from '../pool';
import type { Queryable } from './queryable';

/** Alert events of the quota service (migration quota/0005). */

export const alertEventRow = z.object({
  id: z.string(),
  rule_id: z.string(),
  subject: z.string(),
  policy_id: z.string(),
  window_id: z.string(),
  threshold_pct: z.number(),
  /** numeric: a decimal string. */
  usage_pct: z.string(),
  suppressed: z.boolean(),
  triggered_at: z.string(),
});
export type AlertEventRow = z.infer<typeof alertEventRow>;

const EVENT = sql.fragment`id, rule_id, subject, policy_id, window_id, threshold_pct,
  usage_pct::text, suppressed, triggered_at`;

/** A crossing to record, as decided (services/quota/alerts/crossings.ts). */
export interface NewAlertEvent {
  id: string;
  ruleId: string;
  policyId: string;
  /** The window's current counter key (a fixed window's start, a rolling bucket, lifetime). */
  windowId: string;
  thresholdPct: number;
  /** used × 100 / limit, to two decimals (a decimal string: usage may pass 2^53). */
  usagePct: string;
  cooldownSeconds: number;
}

/**
 * Records the crossings of one request, each once per (rule, subject, policy, window): one
 * already there is left alone. Suppressed when the rule's last unsuppressed event for the
 * subject is within its cooldown of this one.
 */
export async function recordAlertEvents(
  db: Queryable,
  at: { tenantId: string; subject: string; triggeredAt: string },
  events: NewAlertEvent[],
): Promise<readonly AlertEventRow[]> {
  if (events.length === 0) return [];
  const texts = (pick: (e: NewAlertEvent) => string) => sql.array(events.map(pick), 'text');
  const ints = (pick: (e: NewAlertEvent) => number) => sql.array(events.map(pick), 'int4');
  return db.any(sql.type(alertEventRow)`
    INSERT INTO quota.alert_events AS a (id, tenant_id, rule_id, subject, policy_id, window_id,
                                         threshold_pct, usage_pct, suppressed, triggered_at)
    SELECT c.id, ${at.tenantId}, c.rule_id, ${at.subject}, c.policy_id, c.window_id,
           c.threshold_pct, c.usage_pct::numeric,
           EXISTS (SELECT 1 FROM quota.alert_events e
                   WHERE e.rule_id = c.rule_id AND e.subject = ${at.subject} AND NOT e.suppressed
                     AND e.triggered_at > ${at.triggeredAt}::timestamptz
                                          - make_interval(secs => c.cooldown)),
           ${at.triggeredAt}::timestamptz
    FROM unnest(${texts((e) => e.id)}::text[], ${texts((e) => e.ruleId)}::text[],
                ${texts((e) => e.policyId)}::text[], ${texts((e) => e.windowId)}::text[],
                ${ints((e) => e.thresholdPct)}::int4[], ${texts((e) => e.usagePct)}::text[],
                ${ints((e) => e.cooldownSeconds)}::int4[])
         AS c(id, rule_id, policy_id, window_id, threshold_pct, usage_pct, cooldown)
    ON CONFLICT (rule_id, subject, policy_id, window_id) DO NOTHING
    RETURNING ${EVENT}`);
}

/** The tenant's alert events, newest first; of one subject when given. */
export async function listAlertEvents(
  db: Queryable,
  tenantId: string,
  filter: { subject: string | null; limit: number },
): Promise<readonly AlertEventRow[]> {
  const subject =
    filter.subject === null ? sql.fragment`` : sql.fragment`AND subject = ${filter.subject}`;
  return db.any(sql.type(alertEventRow)`
    SELECT ${EVENT} FROM quota.alert_events WHERE tenant_id = ${tenantId} ${subject}
    ORDER BY triggered_at DESC, id DESC LIMIT ${filter.limit}`);
}
