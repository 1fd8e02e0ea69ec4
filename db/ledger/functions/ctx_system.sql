-- The system context (`ledger.system = on`): the operator CLI, the hold dispatcher and sweeper,
-- the async rollup; every tenant's rows are visible.
CREATE OR REPLACE FUNCTION ledger.ctx_system()
 RETURNS boolean
 LANGUAGE sql
 STABLE
AS $function$ SELECT coalesce(current_setting('ledger.system', true), '') = 'on' $function$;
