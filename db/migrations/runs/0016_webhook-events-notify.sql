-- Up Migration
-- A committed webhook event wakes the publishers at once (LISTEN runs_webhook_events) rather
-- than at their next poll: one notification per inserting statement, delivered at its commit.
CREATE FUNCTION notify_webhook_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('runs_webhook_events', '');
  RETURN NULL;
END $$;
CREATE TRIGGER run_events_notify AFTER INSERT ON run_events
  FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_events();
CREATE TRIGGER workflow_events_notify AFTER INSERT ON workflow_events
  FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_events();
CREATE TRIGGER webhook_notices_notify AFTER INSERT ON webhook_notices
  FOR EACH STATEMENT EXECUTE FUNCTION notify_webhook_events();

-- Down Migration
DROP TRIGGER webhook_notices_notify ON webhook_notices;
DROP TRIGGER workflow_events_notify ON workflow_events;
DROP TRIGGER run_events_notify ON run_events;
DROP FUNCTION notify_webhook_events();
