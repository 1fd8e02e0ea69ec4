-- Up Migration
-- Alert mails: an unsuppressed alert event's notice to each e-mail address of its rule, one row
-- per (event, recipient), written with the event (same transaction or flush) and sent by the
-- workflow alert-mail/<id> on the quota queue of the deployment that wrote it (an outbox). The
-- message is rendered when the row is written: a rule renamed or deleted later does not change
-- what its past events said.
CREATE TABLE alert_mails (
  id                  text PRIMARY KEY,
  tenant_id           text NOT NULL REFERENCES tenants (id),
  alert_event_id      text NOT NULL REFERENCES alert_events (id),
  recipient           text NOT NULL,
  subject_line        text NOT NULL,
  body_text           text NOT NULL,
  -- pending (to send or between attempts), sent (the SMTP server accepted it), failed (refused
  -- for good, or every attempt spent).
  status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
  attempt_count       integer NOT NULL DEFAULT 0,
  last_error          text,
  -- The server's reply to DATA, e.g. "250 2.0.0 Ok: queued as ...".
  smtp_response       text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  sent_at             timestamptz,
  workflow_task_queue text NOT NULL,
  workflow_started    boolean NOT NULL DEFAULT false,
  UNIQUE (alert_event_id, recipient)
);
CREATE INDEX alert_mails_unstarted ON alert_mails (workflow_task_queue, created_at)
  WHERE NOT workflow_started AND status = 'pending';

-- Down Migration
DROP TABLE alert_mails;
