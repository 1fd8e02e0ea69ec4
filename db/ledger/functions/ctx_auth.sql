-- The key-lookup context (`ledger.auth = on`): a request's key is read before its tenant is known.
CREATE OR REPLACE FUNCTION ledger.ctx_auth()
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$ SELECT coalesce(current_setting('ledger.auth', true), '') = 'on' $function$;
