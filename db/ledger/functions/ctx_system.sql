CREATE OR REPLACE FUNCTION ledger.ctx_system()
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$ SELECT coalesce(current_setting('ledger.system', true), '') = 'on' $function$;
