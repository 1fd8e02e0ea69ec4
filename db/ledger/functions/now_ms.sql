-- The ledger's clock: now() at millisecond precision, the precision the API returns.
CREATE OR REPLACE FUNCTION ledger.now_ms()
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
AS $function$ SELECT date_trunc('milliseconds', now()) $function$;
