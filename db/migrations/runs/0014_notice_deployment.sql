-- Up Migration
-- The deployment (its runs task queue) a notice belongs to, as a run's or a DAG's events belong
-- to theirs: each deployment's publisher makes deliveries of its own events only, started on its
-- own queue, where its worker serves them. NULL (notices written before): any publisher.
ALTER TABLE runs.webhook_notices ADD COLUMN workflow_task_queue text;

-- Down Migration
ALTER TABLE runs.webhook_notices DROP COLUMN workflow_task_queue;
