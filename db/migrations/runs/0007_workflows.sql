-- Up Migration
-- DAG workflows: a workflow as submitted (its nodes and edges), its state, and its event log.
-- The workflow's Temporal execution dag/<workflow_id> keeps these rows current through its
-- activities (a state and its event in one transaction); the API answers every read from them.
CREATE TABLE workflows (
  workflow_id          text PRIMARY KEY,
  tenant_id            text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  key_id               text REFERENCES api_keys ON DELETE SET NULL,
  name                 text CHECK (char_length(name) <= 128),
  tags                 text[] NOT NULL DEFAULT '{}',
  failure_policy       text NOT NULL CHECK (failure_policy IN ('fail_fast', 'continue')),
  state                text NOT NULL DEFAULT 'pending' CHECK (state IN (
                         'pending', 'running', 'paused', 'succeeded', 'failed', 'cancelled')),
  -- The template a workflow was launched from (templates arrive with their issue).
  template_id          text,
  submitted_at         timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  started_at           timestamptz,
  finished_at          timestamptz,
  -- The outbox, as for runs: the execution's input and task queue until its start is confirmed.
  workflow_input       jsonb,
  workflow_task_queue  text,
  updated_at           timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now())
);
CREATE INDEX workflows_tenant ON workflows (tenant_id, workflow_id DESC);
-- max_concurrent_workflows counts these.
CREATE INDEX workflows_active ON workflows (tenant_id)
  WHERE state IN ('pending', 'running', 'paused');
CREATE INDEX workflows_unstarted ON workflows (workflow_task_queue, submitted_at)
  WHERE workflow_input IS NOT NULL;

-- A node: its spec as accepted (limits clamped), its state, its attempts (one run each).
CREATE TABLE workflow_nodes (
  workflow_id       text NOT NULL REFERENCES workflows ON DELETE CASCADE,
  ref               text NOT NULL CHECK (char_length(ref) BETWEEN 1 AND 128),
  -- The order the nodes were submitted in (reads answer in it).
  position          integer NOT NULL,
  type              text NOT NULL CHECK (type IN ('container', 'approval')),
  spec              jsonb NOT NULL,
  state             text NOT NULL DEFAULT 'pending' CHECK (state IN (
                      'pending', 'running', 'retrying', 'waiting_approval',
                      'succeeded', 'failed', 'skipped', 'cancelled')),
  attempt           integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
  -- Track ids of the node's runs, oldest first.
  attempts          text[] NOT NULL DEFAULT '{}',
  current_track_id  text,
  exit_code         integer,
  -- The JSON of the last stdout line of its last run.
  output            jsonb,
  started_at        timestamptz,
  finished_at       timestamptz,
  PRIMARY KEY (workflow_id, ref)
);

CREATE TABLE workflow_edges (
  workflow_id  text NOT NULL REFERENCES workflows ON DELETE CASCADE,
  from_ref     text NOT NULL,
  to_ref       text NOT NULL,
  condition    text NOT NULL CHECK (condition IN ('on_success', 'on_failure', 'always')),
  position     integer NOT NULL,
  PRIMARY KEY (workflow_id, from_ref, to_ref),
  FOREIGN KEY (workflow_id, from_ref) REFERENCES workflow_nodes ON DELETE CASCADE,
  FOREIGN KEY (workflow_id, to_ref) REFERENCES workflow_nodes ON DELETE CASCADE
);

-- Every state change of a workflow or a node, written with the change: the events feed (`id`,
-- a cursor replayable from 0) and the outbox the webhook dispatcher will read (published_at
-- NULL). event_id is made by the workflow, so a retried activity writes its event once. A
-- workflow's changes are written one at a time, so its ids follow the order of its changes.
CREATE TABLE workflow_events (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id      text NOT NULL UNIQUE,
  workflow_id   text NOT NULL REFERENCES workflows ON DELETE CASCADE,
  tenant_id     text NOT NULL,
  node_ref      text,
  kind          text NOT NULL CHECK (kind IN ('workflow', 'node')),
  from_state    text,
  to_state      text NOT NULL,
  detail        jsonb NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT date_trunc('milliseconds', clock_timestamp()),
  published_at  timestamptz,
  CHECK ((kind = 'node') = (node_ref IS NOT NULL))
);
CREATE INDEX workflow_events_feed ON workflow_events (workflow_id, id);
CREATE INDEX workflow_events_unpublished ON workflow_events (id) WHERE published_at IS NULL;

-- A node's runs: found by their workflow and node.
CREATE INDEX runs_workflow_node ON runs (workflow_id, node_ref) WHERE workflow_id IS NOT NULL;

-- Down Migration
DROP INDEX runs_workflow_node;
DROP TABLE workflow_events;
DROP TABLE workflow_edges;
DROP TABLE workflow_nodes;
DROP TABLE workflows;
