-- Up Migration
-- Workflow templates: a stored, parameterised workflow definition run by id or name. Each
-- publish of a new definition or params is a new version, kept (a run may pin one); the
-- template row names the latest. DELETE keeps the row (workflows launched from it name it).
CREATE TABLE templates (
  template_id  text PRIMARY KEY,
  tenant_id    text NOT NULL REFERENCES tenants ON DELETE CASCADE,
  name         text CHECK (name ~ '^[a-z][a-z0-9-]{1,62}$'),
  description  text CHECK (char_length(description) <= 1024),
  -- The latest version; template_versions holds every one.
  version      integer NOT NULL DEFAULT 1 CHECK (version >= 1),
  created_at   timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  updated_at   timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  -- Set by DELETE: the template is found, listed and counted no more, and its name is free.
  deleted_at   timestamptz
);
-- A name is unique among the tenant's live templates.
CREATE UNIQUE INDEX templates_name ON templates (tenant_id, name)
  WHERE deleted_at IS NULL AND name IS NOT NULL;
-- The tenant's live templates: listed newest first, counted against max_templates.
CREATE INDEX templates_tenant ON templates (tenant_id, template_id DESC) WHERE deleted_at IS NULL;

CREATE TABLE template_versions (
  template_id  text NOT NULL REFERENCES templates ON DELETE CASCADE,
  version      integer NOT NULL CHECK (version >= 1),
  -- The parameter declarations and the definition (a workflow submit body with ${{ name }}
  -- placeholders), as accepted at register or PATCH.
  params       jsonb NOT NULL,
  definition   jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  PRIMARY KEY (template_id, version)
);

-- The values of a template run's secret parameters, never in clear: AES-256-GCM under
-- RUNS_SECRETS_KEY (api/platform/secrets.ts, `v1:<iv>:<tag>:<ciphertext>`, bound to the
-- workflow and the name). The node specs keep the ${{ name }} placeholder in their env values;
-- the engine decrypts and substitutes at node launch.
CREATE TABLE workflow_secrets (
  workflow_id  text NOT NULL REFERENCES workflows ON DELETE CASCADE,
  name         text NOT NULL,
  ciphertext   text NOT NULL CHECK (ciphertext LIKE 'v1:%'),
  PRIMARY KEY (workflow_id, name)
);

ALTER TABLE tenant_quotas
  ADD COLUMN max_templates integer NOT NULL DEFAULT 100 CHECK (max_templates >= 0);

-- A template run's scheduled_start (a past instant is stored as the submit's now): the whole
-- graph waits for it. NULL: as soon as possible (every plain workflow submit).
ALTER TABLE workflows ADD COLUMN scheduled_start timestamptz;
-- GET /api/v1/workflows?template_id=...
CREATE INDEX workflows_template ON workflows (tenant_id, template_id, workflow_id DESC)
  WHERE template_id IS NOT NULL;

-- Down Migration
DROP INDEX workflows_template;
ALTER TABLE workflows DROP COLUMN scheduled_start;
ALTER TABLE tenant_quotas DROP COLUMN max_templates;
DROP TABLE workflow_secrets;
DROP TABLE template_versions;
DROP TABLE templates;
