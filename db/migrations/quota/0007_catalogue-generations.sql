-- Up Migration
-- Generations of what a decision reads from each API process's memory (api/quota/catalogue-cache.ts):
-- a tenant's catalogue (resources, policies, plans and their policies, alert rules, keys and their
-- grants, the tenant's status) and each subject's assignment and overrides. Every write of those
-- tables bumps its generation in the same transaction (the triggers below, so no writer can forget);
-- a decision checks that the generations it decided with are still current, in the store it decides
-- in (Postgres here, Redis for fast mode), and a process whose copy is older reads it again.
CREATE TABLE catalogue_generations (
  tenant_id  text PRIMARY KEY,
  generation bigint NOT NULL
);

CREATE TABLE subject_generations (
  tenant_id  text NOT NULL,
  subject    text NOT NULL,
  generation bigint NOT NULL,
  PRIMARY KEY (tenant_id, subject)
);

-- The functions are db/quota/functions/bump_*.sql (applied after the migrations); declared here
-- first so the triggers can name them.
CREATE FUNCTION bump_catalogue_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RETURN NULL; END $$;
CREATE FUNCTION bump_subject_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RETURN NULL; END $$;

CREATE TRIGGER resources_generation AFTER INSERT OR UPDATE OR DELETE ON resources
  FOR EACH ROW EXECUTE FUNCTION bump_catalogue_generation();
CREATE TRIGGER policies_generation AFTER INSERT OR UPDATE OR DELETE ON policies
  FOR EACH ROW EXECUTE FUNCTION bump_catalogue_generation();
CREATE TRIGGER plans_generation AFTER INSERT OR UPDATE OR DELETE ON plans
  FOR EACH ROW EXECUTE FUNCTION bump_catalogue_generation();
CREATE TRIGGER plan_policies_generation AFTER INSERT OR UPDATE OR DELETE ON plan_policies
  FOR EACH ROW EXECUTE FUNCTION bump_catalogue_generation();
CREATE TRIGGER alert_rules_generation AFTER INSERT OR UPDATE OR DELETE ON alert_rules
  FOR EACH ROW EXECUTE FUNCTION bump_catalogue_generation();
-- last_used_at is written in batches and changes nothing a request is judged by.
CREATE TRIGGER api_keys_generation
  AFTER INSERT OR DELETE OR UPDATE OF key_id, secret_sha256, tenant_id, scopes, actor, status, constraints
  ON api_keys FOR EACH ROW EXECUTE FUNCTION bump_catalogue_generation();
CREATE TRIGGER authz_tuples_generation AFTER INSERT OR UPDATE OR DELETE ON authz_tuples
  FOR EACH ROW EXECUTE FUNCTION bump_catalogue_generation();
CREATE TRIGGER tenants_generation AFTER INSERT OR UPDATE OF status, bootstrap_state ON tenants
  FOR EACH ROW EXECUTE FUNCTION bump_catalogue_generation();

CREATE TRIGGER assignments_generation AFTER INSERT OR UPDATE OR DELETE ON assignments
  FOR EACH ROW EXECUTE FUNCTION bump_subject_generation();
CREATE TRIGGER overrides_generation AFTER INSERT OR UPDATE OR DELETE ON overrides
  FOR EACH ROW EXECUTE FUNCTION bump_subject_generation();
