import { ulid } from '../../../db/ids';
import {
  listAlertEvents,
  recordAlertEvents,
  type AlertEventRow,
  type NewAlertEvent,
} from '../../../db/quota/alert-events';
import type { DatabasePool } from '../../../db/pool';
import { insertAlertMails } from '../../../db/quota/alert-mails';
import { ruleRecipients, type AlertRuleRow } from '../../../db/quota/alert-rules';
import { insertDelivery } from '../../../db/quota/webhooks';
import type { Queryable } from '../../../db/quota/queryable';
import type { PolicyVerdict } from '../consumption/verdicts';
import type { Principal } from '../credentials';
import { tenantOf } from '../keys';
import { crossingsOf } from './crossings';
import { alertMail } from './mail';

/**
 * Alert events: the crossings an admitted request makes, decided with it and recorded with it
 * (in a strict decision's transaction; through the ledger stream for a fast one, written by its
 * flush), and listed by GET /v1/alert-events.
 */

/** Where and when a request's crossings happened, as the stream carries them. */
export interface StreamedAlerts {
  tenantId: string;
  subject: string;
  triggeredAt: string;
  events: NewAlertEvent[];
}

/** The crossings of an admitted request, ready to record; null when there are none. */
export function alertsOf(
  rules: AlertRuleRow[],
  at: { tenantId: string; subject: string; nowMs: number },
  verdicts: PolicyVerdict[],
): StreamedAlerts | null {
  if (rules.length === 0) return null;
  const crossings = crossingsOf(rules, verdicts, at.subject);
  if (crossings.length === 0) return null;
  return {
    tenantId: at.tenantId,
    subject: at.subject,
    triggeredAt: new Date(at.nowMs).toISOString(),
    events: crossings.map((c) => ({ id: `ale_${ulid()}`, ...c })),
  };
}

/** The event type of an alert's notice, and the only one an endpoint subscribes to now. */
export const ALERT_TRIGGERED = 'alert.triggered';

/** An alert event's notice: `{type, timestamp, data}`, as every quota webhook message. */
export const alertNotice = (event: AlertEventRow, ruleName: string) => ({
  type: ALERT_TRIGGERED,
  timestamp: event.triggered_at,
  data: { ...alertEventOut(event), alert_event_id: event.id, rule_name: ruleName },
});

/**
 * Records a request's crossings (each once) and, for each one recorded unsuppressed, its
 * notices: a pending delivery to every live, enabled endpoint of the rule subscribed to it, and
 * a pending mail to every e-mail address of the rule. The quota API's outboxes start them
 * (delivery/quota/<id>, alert-mail/<id>) on `queue`. One caller's transaction holds it all.
 */
export async function recordAlerts(
  db: Queryable,
  alerts: StreamedAlerts | null,
  queue: string,
): Promise<readonly AlertEventRow[]> {
  if (!alerts) return [];
  const recorded = await recordAlertEvents(db, alerts, alerts.events);
  const notified = recorded.filter((e) => !e.suppressed);
  if (notified.length === 0) return recorded;
  const rules = await ruleRecipients(
    db,
    notified.map((e) => e.rule_id),
    ALERT_TRIGGERED,
  );
  for (const event of notified) {
    const rule = rules.find((r) => r.rule_id === event.rule_id);
    if (!rule) continue;
    for (const endpointId of rule.endpoint_ids)
      await insertDelivery(db, {
        id: `whd_${ulid()}`,
        tenantId: alerts.tenantId,
        endpointId,
        alertEventId: event.id,
        eventType: ALERT_TRIGGERED,
        messageId: `msg_${ulid()}`,
        payload: alertNotice(event, rule.rule_name),
        status: 'pending',
        attemptCount: 0,
        workflowTaskQueue: queue,
      });
    await insertAlertMails(
      db,
      rule.emails.map((recipient) => ({
        id: `alm_${ulid()}`,
        tenantId: alerts.tenantId,
        alertEventId: event.id,
        recipient,
        ...alertMail(event, rule.rule_name),
        workflowTaskQueue: queue,
      })),
    );
  }
  return recorded;
}

export const alertEventOut = (row: AlertEventRow) => ({
  ...row,
  usage_pct: Number(row.usage_pct),
});

export async function listTenantAlertEvents(
  deps: { pool: DatabasePool },
  principal: Principal,
  filter: { subject: string | null; limit: number },
) {
  return (await listAlertEvents(deps.pool, tenantOf(principal), filter)).map(alertEventOut);
}
