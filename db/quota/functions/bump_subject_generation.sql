-- A write of a subject's assignment or overrides bumps the subject's generation in the same
-- transaction (migration quota/0007).
CREATE OR REPLACE FUNCTION quota.bump_subject_generation()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
  changed record;
BEGIN
  IF TG_OP = 'DELETE' THEN changed := OLD; ELSE changed := NEW; END IF;
  INSERT INTO quota.subject_generations AS g (tenant_id, subject, generation)
  VALUES (changed.tenant_id, changed.subject, 1)
  ON CONFLICT (tenant_id, subject) DO UPDATE SET generation = g.generation + 1;
  RETURN NULL;
END $function$
