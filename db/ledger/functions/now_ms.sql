CREATE OR REPLACE FUNCTION ledger.now_ms()
 RETURNS timestamp with time zone
 LANGUAGE sql
 STABLE
AS $function$ SELECT date_trunc('milliseconds', now()) $function$;
