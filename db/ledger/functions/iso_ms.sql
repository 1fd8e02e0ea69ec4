-- The API's instant format: ISO-8601 UTC with milliseconds and Z.
CREATE OR REPLACE FUNCTION ledger.iso_ms(p_at timestamp with time zone)
 RETURNS text
 LANGUAGE sql
 STABLE
AS $function$
  SELECT to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$function$;
