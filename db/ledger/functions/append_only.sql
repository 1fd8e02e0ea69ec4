-- The journal is append-only: entries and committed_legs refuse UPDATE, DELETE and TRUNCATE,
-- transactions refuses TRUNCATE (its UPDATEs are guarded by transactions_guard). SQLSTATE LA001.
CREATE OR REPLACE FUNCTION ledger.append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'LA001';
END $function$;
