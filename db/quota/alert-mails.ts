import { sql } from '../pool';
import type { Queryable } from './queryable';

/** An alert event's notice to one address of its rule, rendered when the event is recorded. */
export interface NewAlertMail {
  id: string;
  tenantId: string;
  alertEventId: string;
  recipient: string;
  subjectLine: string;
  bodyText: string;
  workflowTaskQueue: string;
}

export type AlertMailStatus = 'pending' | 'sent' | 'failed';

export interface AlertMailRow {
  id: string;
  tenant_id: string;
  alert_event_id: string;
  recipient: string;
  subject_line: string;
  body_text: string;
  status: AlertMailStatus;
  attempt_count: number;
  last_error: string | null;
  smtp_response: string | null;
  sent_at: string | null;
}

const MAIL = sql.fragment`id, tenant_id, alert_event_id, recipient, subject_line, body_text,
  status, attempt_count, last_error, smtp_response, sent_at`;

/** Writes pending mails, one per (event, recipient): one already there is left alone. */
export async function insertAlertMails(db: Queryable, mails: NewAlertMail[]): Promise<void> {
  if (mails.length === 0) return;
  const texts = (pick: (m: NewAlertMail) => string) => sql.array(mails.map(pick), 'text');
  await db.query(sql.unsafe`
    INSERT INTO quota.alert_mails (id, tenant_id, alert_event_id, recipient, subject_line,
                                   body_text, workflow_task_queue)
    SELECT * FROM unnest(${texts((m) => m.id)}::text[], ${texts((m) => m.tenantId)}::text[],
                         ${texts((m) => m.alertEventId)}::text[], ${texts((m) => m.recipient)}::text[],
                         ${texts((m) => m.subjectLine)}::text[], ${texts((m) => m.bodyText)}::text[],
                         ${texts((m) => m.workflowTaskQueue)}::text[])
    ON CONFLICT (alert_event_id, recipient) DO NOTHING`);
}

/** The mail an attempt sends, counted as attempted; null once it has been sent or has failed. */
export async function beginMailAttempt(db: Queryable, id: string): Promise<AlertMailRow | null> {
  return (await db.maybeOne(sql.unsafe`
    UPDATE quota.alert_mails SET attempt_count = attempt_count + 1, updated_at = now()
    WHERE id = ${id} AND status = 'pending'
    RETURNING ${MAIL}`)) as AlertMailRow | null;
}

/** An attempt's outcome: sent with the server's reply, or an error (pending: to retry). */
export async function recordMailOutcome(
  db: Queryable,
  id: string,
  outcome:
    { status: 'sent'; smtpResponse: string } | { status: 'pending' | 'failed'; error: string },
): Promise<void> {
  const sent = outcome.status === 'sent';
  await db.query(sql.unsafe`
    UPDATE quota.alert_mails
    SET status = ${outcome.status}, updated_at = now(),
        smtp_response = ${sent ? outcome.smtpResponse : null},
        last_error = ${sent ? null : outcome.error},
        sent_at = ${sent ? sql.fragment`now()` : sql.fragment`NULL`}
    WHERE id = ${id} AND status = 'pending'`);
}

/** An event's mails, by recipient. */
export async function mailsOfEvent(db: Queryable, alertEventId: string): Promise<AlertMailRow[]> {
  return (await db.any(sql.unsafe`
    SELECT ${MAIL} FROM quota.alert_mails WHERE alert_event_id = ${alertEventId}
    ORDER BY recipient`)) as AlertMailRow[];
}
