-- Statement-level, after inserts into run_events, workflow_events and webhook_notices: wakes
-- the publishers (api/runs/webhooks/publisher.ts). Identical notifications of one transaction
-- are folded into one by Postgres.
CREATE OR REPLACE FUNCTION runs.notify_webhook_events()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM pg_notify('runs_webhook_events', '');
  RETURN NULL;
END $function$;
