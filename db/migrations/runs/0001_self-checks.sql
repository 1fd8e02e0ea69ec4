-- Up Migration
-- A self-check proves one path through every layer: API → Temporal workflow → activities that
-- write here and run a container pulled from the registry on a worker host.
CREATE TABLE self_checks (
  check_id     text PRIMARY KEY,
  state        text NOT NULL DEFAULT 'scheduled'
               CHECK (state IN ('scheduled', 'running', 'succeeded', 'failed')),
  image        text NOT NULL,
  command      jsonb NOT NULL DEFAULT '[]',
  worker_id    text,
  exit_code    integer,
  timed_out    boolean NOT NULL DEFAULT false,
  stdout       text,
  stderr       text,
  error        text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  started_at   timestamptz,
  finished_at  timestamptz
);

-- Down Migration
DROP TABLE self_checks;
