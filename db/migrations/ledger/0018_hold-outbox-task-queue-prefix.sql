-- Up Migration
-- A hold's outbox row carries the task-queue prefix of the process that wrote it (the connection
-- setting platform.task_queue_prefix, set by db/pool.ts when the prefix is not empty), and a
-- ledger API starts only the holds of its own prefix, or of none: two test runs, or a bench and a
-- test run, on one database no longer start each other's holds on their own queues.
ALTER TABLE hold_outbox
  ADD COLUMN task_queue_prefix text NOT NULL
  DEFAULT coalesce(current_setting('platform.task_queue_prefix', true), '');

-- Down Migration
ALTER TABLE hold_outbox DROP COLUMN task_queue_prefix;
