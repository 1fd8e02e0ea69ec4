-- Up Migration
-- A delivery's first attempt is made by the API process that made it, without a workflow; only a
-- delivery that needs another attempt (or whose process died) gets its workflow. The sweeper
-- therefore also starts rows left delivering or retrying without one.
DROP INDEX webhook_deliveries_unstarted;
CREATE INDEX webhook_deliveries_unstarted ON webhook_deliveries (workflow_task_queue, delivery_id)
  WHERE NOT workflow_started AND state IN ('pending', 'delivering', 'retrying');
-- Per-endpoint order: a first attempt waits for the earlier deliveries of its endpoint still
-- waiting for theirs (a small set, whatever the endpoint's history).
CREATE INDEX webhook_deliveries_first_attempt ON webhook_deliveries (endpoint_id, delivery_id)
  WHERE state = 'pending' OR (state = 'delivering' AND attempts = 1);

-- Down Migration
DROP INDEX webhook_deliveries_first_attempt;
DROP INDEX webhook_deliveries_unstarted;
CREATE INDEX webhook_deliveries_unstarted ON webhook_deliveries (workflow_task_queue, delivery_id)
  WHERE NOT workflow_started AND state = 'pending';
