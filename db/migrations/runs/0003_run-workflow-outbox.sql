-- Up Migration
-- Submit answers as soon as the run is stored; its workflow is started right after the commit.
-- Until the start is confirmed the run keeps the workflow's input and task queue here, so a
-- sweeper in any API process (of the same task queue) starts what a crashed process did not.
ALTER TABLE runs ADD COLUMN workflow_input jsonb;
ALTER TABLE runs ADD COLUMN workflow_task_queue text;
CREATE INDEX runs_workflow_unstarted ON runs (workflow_task_queue, submitted_at)
  WHERE workflow_input IS NOT NULL;

-- Down Migration
DROP INDEX runs_workflow_unstarted;
ALTER TABLE runs DROP COLUMN workflow_task_queue;
ALTER TABLE runs DROP COLUMN workflow_input;
