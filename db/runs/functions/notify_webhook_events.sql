-- Statement-level, after inserts into run_events, workflow_events and webhook_notices (each
-- trigger names its rows `inserted`): wakes the publishers (services/runs/webhooks/publisher.ts), one
-- notification per tenant of the rows that has a live webhook (an endpoint or an inline one),
-- its payload the tenant id; other tenants' events wait for the publishers' poll. Identical
-- notifications of one transaction are folded into one.
CREATE OR REPLACE FUNCTION runs.notify_webhook_events()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  PERFORM pg_notify('runs_webhook_events', t.tenant_id)
  FROM (SELECT DISTINCT tenant_id FROM inserted) t
  WHERE EXISTS (
    SELECT 1 FROM runs.webhook_endpoints e WHERE e.tenant_id = t.tenant_id AND e.deleted_at IS NULL);
  RETURN NULL;
END $function$;
