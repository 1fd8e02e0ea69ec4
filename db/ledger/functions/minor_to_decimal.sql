-- 1234 at scale 2 → '12.34'; -5 → '-0.05'; scale 0 → '1234' (as minorToDecimal in money.ts).
-- In plpgsql: a SQL version is not inlinable (it has a FROM) and took 22 us per call, this one
-- 1.5 us; posting_check calls it for every sync account of every posting.
CREATE OR REPLACE FUNCTION ledger.minor_to_decimal(p_minor numeric, p_scale integer)
 RETURNS text
 LANGUAGE plpgsql
 IMMUTABLE
AS $function$
DECLARE
  t text := trunc(abs(p_minor))::text;
BEGIN
  IF length(t) <= p_scale THEN t := lpad(t, p_scale + 1, '0'); END IF;
  RETURN CASE WHEN p_minor < 0 THEN '-' ELSE '' END || left(t, length(t) - p_scale)
         || CASE WHEN p_scale > 0 THEN '.' || right(t, p_scale) ELSE '' END;
END $function$;
