-- Up Migration
-- The Docker hosts that are alive, by the any-host queue they serve (one per deployment, or per
-- test run with its task-queue prefix): each worker process refreshes its row every few seconds.
-- A run takes a concurrency slot only while some host of its queue is alive (the state table's
-- "slot and worker free"), so with every worker down runs keep waiting `scheduled`, holding no
-- slot, with max_queue_seconds counting.
CREATE TABLE docker_hosts (
  any_host_queue text NOT NULL,
  worker_id      text NOT NULL,
  seen_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (any_host_queue, worker_id)
);

-- Down Migration
DROP TABLE docker_hosts;
