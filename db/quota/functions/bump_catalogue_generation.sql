-- A write of a tenant's catalogue (resources, policies, plans, plan_policies, alert_rules, api_keys,
-- authz_tuples, the tenant itself) bumps the tenant's generation in the same transaction
-- (migration quota/0007). Operator keys and the platform's grants belong to no tenant: nothing.
CREATE OR REPLACE FUNCTION quota.bump_catalogue_generation()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  changed record;
  tenant text;
BEGIN
  IF TG_OP = 'DELETE' THEN changed := OLD; ELSE changed := NEW; END IF;
  -- One statement per table shape: a record's fields are resolved when a statement runs.
  IF TG_TABLE_NAME = 'tenants' THEN
    tenant := changed.id;
  ELSIF TG_TABLE_NAME = 'plan_policies' THEN
    tenant := (SELECT p.tenant_id FROM quota.plans p WHERE p.id = changed.plan_id);
  ELSIF TG_TABLE_NAME = 'authz_tuples' THEN
    IF changed.object LIKE 'tenant:%' THEN tenant := substr(changed.object, 8); END IF;
  ELSE
    tenant := changed.tenant_id;
  END IF;
  IF tenant IS NOT NULL THEN
    INSERT INTO quota.catalogue_generations AS g (tenant_id, generation) VALUES (tenant, 1)
    ON CONFLICT (tenant_id) DO UPDATE SET generation = g.generation + 1;
  END IF;
  RETURN NULL;
END $function$
