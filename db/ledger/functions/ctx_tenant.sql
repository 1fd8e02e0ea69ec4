-- The row-level-security context: the tenant this transaction acts for, set by the application
-- with set_config('ledger.tenant_id', ..., true) (null: none).
CREATE OR REPLACE FUNCTION ledger.ctx_tenant()
 RETURNS uuid
 LANGUAGE sql
 STABLE
AS $function$ SELECT NULLIF(current_setting('ledger.tenant_id', true), '')::uuid $function$;
