import { z } from 'zod';
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

const ALERT_MAIL_STATUSES = ['pending', 'sent', 'failed'] as const;
export type AlertMailStatus = (typeof ALERT_MAIL_STATUSES)[number];

export const alertMailRow = z.object({
  id: z.string(),
  tenant_id: z.string(),
  alert_event_id: z.string(),
  recipient: z.string(),
  subject_line: z.string(),
  body_text: z.string(),
  status: z.enum(ALERT_MAIL_STATUSES),
  attempt_count: z.number(),
  last_error: z.string().nullable(),
  smtp_response: z.string().nullable(),
  sent_at: z.string().nullable(),
});
export type AlertMailRow = z.infer<typeof alertMailRow>;

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
  return db.maybeOne(sql.type(alertMailRow)`
    UPDATE quota.alert_mails SET attempt_count = attempt_count + 1, updated_at = now()
    WHERE id = ${id} AND status = 'pending'
    RETURNING ${MAIL}`);
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
export async function mailsOfEvent(
  db: Queryable,
  alertEventId: string,
): Promise<readonly AlertMailRow[]> {
  return db.any(sql.type(alertMailRow)`
    SELECT ${MAIL} FROM quota.alert_mails WHERE alert_event_id = ${alertEventId}
    ORDER BY recipient`);
}
