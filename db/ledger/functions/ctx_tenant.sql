CREATE OR REPLACE FUNCTION ledger.ctx_tenant()
 RETURNS uuid
 LANGUAGE sql
 STABLE
AS $function$ SELECT NULLIF(current_setting('ledger.tenant_id', true), '')::uuid $function$;
