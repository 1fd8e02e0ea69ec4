-- Depth is capped at one: a sub-tenant's parent must be a root.
CREATE OR REPLACE FUNCTION ledger.tenants_depth_one()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  IF NEW.parent_id IS NOT NULL AND EXISTS (
       SELECT 1 FROM ledger.tenants WHERE tenant_id = NEW.parent_id AND parent_id IS NOT NULL) THEN
    RAISE EXCEPTION 'sub-tenant depth is capped at one' USING ERRCODE = 'LD001';
  END IF;
  IF NEW.kind IS DISTINCT FROM OLD.kind AND TG_OP = 'UPDATE' THEN
    RAISE EXCEPTION 'tenant kind is immutable' USING ERRCODE = 'LI001';
  END IF;
  RETURN NEW;
END $function$;
