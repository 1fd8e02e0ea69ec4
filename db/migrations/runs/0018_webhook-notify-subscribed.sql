-- Up Migration
-- Only a commit that may make a delivery wakes the publishers: events of a tenant with a live
-- webhook (an endpoint, or an inline one of a run or workflow). Any other event is published
-- by the publishers' next poll, in bulk, instead of costing each API process a pass per commit.
-- The function (db/runs/functions/notify_webhook_events.sql) reads the statement's rows, and
-- asks whether their tenant has a live webhook in one probe of this index (a tenant that has
-- used inline webhooks keeps rows of them, so it is woken for all its events: too often, never
-- too seldom).
CREATE INDEX webhook_endpoints_live_tenant ON webhook_endpoints (tenant_id) WHERE deleted_at IS NULL;
DROP TRIGGER run_events_notify ON run_events;
DROP TRIGGER workflow_events_notify ON workflow_events;
DROP TRIGGER webhook_notices_notify ON webhook_notices;
CREATE TRIGGER run_events_notify AFTER INSERT ON run_events REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_events();
CREATE TRIGGER workflow_events_notify AFTER INSERT ON workflow_events
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_events();
CREATE TRIGGER webhook_notices_notify AFTER INSERT ON webhook_notices
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_events();

-- Down Migration
DROP INDEX webhook_endpoints_live_tenant;
CREATE OR REPLACE FUNCTION notify_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('runs_webhook_events', '');
  RETURN NULL;
END $$;
DROP TRIGGER webhook_notices_notify ON webhook_notices;
DROP TRIGGER workflow_events_notify ON workflow_events;
DROP TRIGGER run_events_notify ON run_events;
CREATE TRIGGER run_events_notify AFTER INSERT ON run_events
  FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_events();
CREATE TRIGGER workflow_events_notify AFTER INSERT ON workflow_events
  FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_events();
CREATE TRIGGER webhook_notices_notify AFTER INSERT ON webhook_notices
  FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_events();
