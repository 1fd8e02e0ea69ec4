-- Up Migration
-- Alert events: a subject's usage of a policy window crossing an alert rule's threshold, decided
-- with the consume that crossed it (strict: in its transaction; fast: through the ledger stream
-- and its flush). One per (rule, subject, policy, window): a window crosses a rule once.
CREATE TABLE alert_events (
  id             text PRIMARY KEY,
  tenant_id      text NOT NULL REFERENCES tenants (id),
  -- No foreign key: a rule's events outlive it.
  rule_id        text NOT NULL,
  subject        text NOT NULL,
  policy_id      text NOT NULL,
  window_id      text NOT NULL,
  threshold_pct  integer NOT NULL,
  usage_pct      numeric NOT NULL,
  -- Within the rule's cooldown of the subject's last event that was not: recorded, not notified.
  suppressed     boolean NOT NULL,
  triggered_at   timestamptz NOT NULL,
  UNIQUE (rule_id, subject, policy_id, window_id)
);
CREATE INDEX alert_events_tenant ON alert_events (tenant_id, triggered_at DESC, id DESC);
CREATE INDEX alert_events_subject ON alert_events (tenant_id, subject, triggered_at DESC, id DESC);
CREATE INDEX alert_events_cooldown ON alert_events (rule_id, subject, triggered_at DESC)
  WHERE NOT suppressed;

ALTER TABLE webhook_deliveries
  ADD CONSTRAINT webhook_deliveries_alert_event FOREIGN KEY (alert_event_id)
  REFERENCES alert_events (id),
  -- An alert's deliveries go through the platform delivery engine (delivery/quota/<id>): an
  -- outbox, started by the quota API of the deployment whose queue the row names.
  ADD COLUMN workflow_task_queue text,
  ADD COLUMN workflow_started boolean NOT NULL DEFAULT false;
CREATE INDEX webhook_deliveries_unstarted ON webhook_deliveries (workflow_task_queue, created_at)
  WHERE NOT workflow_started AND status = 'pending';

-- Down Migration
DROP INDEX webhook_deliveries_unstarted;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_alert_event,
  DROP COLUMN workflow_task_queue, DROP COLUMN workflow_started;
DROP TABLE alert_events;
