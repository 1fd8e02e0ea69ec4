-- The admin audit is append-only: UPDATE, DELETE and TRUNCATE of quota.audit are refused in the
-- database itself (SQLSTATE QA001), whatever the application does.
CREATE OR REPLACE FUNCTION quota.audit_append_only()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  RAISE EXCEPTION 'quota.audit is append-only: % refused', TG_OP USING ERRCODE = 'QA001';
END $function$
