-- What strict checks read (services/quota/consumption/in-one-statement.ts): for each request, whether
-- the catalogue generations it was judged by are current and, if so, each policy's usage in its
-- window (no lock, no write: a check consumes nothing), for many requests in one statement.
-- p_requests: [{tenant_id, subject, catalogue_generation, subject_generation, policies:
-- [{policy_id, window_keys}]}]. Answers, in order, {status: moved} or {status: read, used: [text]}.
CREATE OR REPLACE FUNCTION quota.read_strict_quotas(p_requests jsonb)
 RETURNS jsonb
 LANGUAGE sql
 STABLE
AS $function$
  SELECT coalesce(jsonb_agg(
    CASE WHEN coalesce((SELECT g.generation FROM quota.catalogue_generations g
                        WHERE g.tenant_id = r->>'tenant_id'), 0)
                = (r->>'catalogue_generation')::bigint
          AND coalesce((SELECT g.generation FROM quota.subject_generations g
                        WHERE g.tenant_id = r->>'tenant_id' AND g.subject = r->>'subject'), 0)
                = (r->>'subject_generation')::bigint
      THEN jsonb_build_object('status', 'read', 'used', (
        SELECT coalesce(jsonb_agg((
          SELECT coalesce(sum(c.used), 0)::text FROM quota.counters c
          WHERE c.tenant_id = r->>'tenant_id' AND c.subject = r->>'subject'
            AND c.policy_id = p->>'policy_id'
            AND c.window_key = ANY(ARRAY(SELECT jsonb_array_elements_text(p->'window_keys'))))
          ORDER BY pn), '[]')
        FROM jsonb_array_elements(r->'policies') WITH ORDINALITY AS q(p, pn)))
      ELSE jsonb_build_object('status', 'moved')
    END ORDER BY rn), '[]')
  FROM jsonb_array_elements(p_requests) WITH ORDINALITY AS t(r, rn)
$function$
