CREATE OR REPLACE FUNCTION ledger.authenticate_and_claim_many(p_key_ids uuid[], p_secret_sha256s bytea[], p_roles text[], p_endpoints text[], p_keys text[], p_request_sha256s bytea[], p_lock_ms integer)
 RETURNS TABLE(ord integer, key_id uuid, tenant_id uuid, role text, secret_sha256 bytea, expired boolean, revoked boolean, tenant_status text, parent_id uuid, parent_status text, claimed boolean, request_sha256 bytea, state text, response_status smallint, response_body jsonb)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
#variable_conflict use_column
DECLARE
  v_requests ledger.auth_claim_request[];  -- known keys, in (tenant, endpoint, key, ord) order: n
  v_tenants uuid[];                        -- the tenants of the eligible requests, in order
  v_loop boolean;
  v_order integer[];
  v_tenant uuid;
  v_made integer[];                        -- n of the requests whose claim step 2 made
  v_claimed integer[] := '{}';
  v_made_count integer;
  v_eligible_count integer;
  v_lapses boolean := now() + make_interval(secs => p_lock_ms / 1000.0) < now();
  -- The requests judged in step 3: n, and the claim row of each.
  v_n integer[] := '{}';
  v_c boolean[] := '{}';
  v_h bytea[] := '{}';
  v_s text[] := '{}';
  v_st smallint[] := '{}';
  v_b jsonb[] := '{}';
  i integer;
BEGIN
  v_loop := coalesce(array_ndims(p_key_ids), 1) > 1 OR coalesce(array_lower(p_key_ids, 1), 1) <> 1
         OR coalesce(array_ndims(p_endpoints), 1) > 1 OR coalesce(array_lower(p_endpoints, 1), 1) <> 1
         OR coalesce(array_ndims(p_keys), 1) > 1 OR coalesce(array_lower(p_keys, 1), 1) <> 1;
  IF NOT v_loop THEN
    PERFORM set_config('ledger.auth', 'on', true);
    SELECT array_agg(ROW(q.n, q.ord, q.key_id, q.tenant_id, q.role, q.secret_sha256, q.expired, q.revoked,
                         q.tenant_status, q.parent_id, q.parent_status, q.eligible, q.endpoint, q.key,
                         q.request_sha256)::ledger.auth_claim_request ORDER BY q.n),
           array_agg(DISTINCT q.tenant_id ORDER BY q.tenant_id) FILTER (WHERE q.eligible),
           coalesce(bool_or(q.eligible AND q.request_sha256 IS NULL), false)
    INTO v_requests, v_tenants, v_loop
    FROM (SELECT c.*,
                 coalesce(c.key IS NOT NULL AND c.secret_sha256 = p_secret_sha256s[c.ord] AND NOT c.revoked
                          AND NOT c.expired AND c.tenant_status = 'active'
                          AND (c.parent_id IS NULL OR c.parent_status = 'active') AND c.role = p_roles[c.ord],
                          false) AS eligible
          FROM (SELECT row_number() OVER (ORDER BY k.tenant_id, u.endpoint, u.key, u.ord)::integer AS n,
                       u.ord::integer AS ord, k.key_id, k.tenant_id, k.role, k.secret_sha256,
                       (k.expires_at IS NOT NULL AND k.expires_at <= now()) AS expired,
                       (k.revoked_at IS NOT NULL) AS revoked, t.status AS tenant_status, t.parent_id,
                       p.status AS parent_status, u.endpoint, u.key,
                       p_request_sha256s[u.ord::integer] AS request_sha256
                FROM unnest(p_key_ids, p_endpoints, p_keys) WITH ORDINALITY AS u(key_id, endpoint, key, ord)
                JOIN ledger.api_keys k ON k.key_id = u.key_id
                LEFT JOIN ledger.tenants t ON t.tenant_id = k.tenant_id
                LEFT JOIN ledger.tenants p ON p.tenant_id = t.parent_id) c) q;
    PERFORM set_config('ledger.auth', '', true);
  END IF;

  IF v_loop THEN  -- 0009's loop
    PERFORM set_config('ledger.auth', 'on', true);
    SELECT array_agg(u.ord::integer ORDER BY k.tenant_id, u.endpoint, u.key, u.ord) INTO v_order
    FROM unnest(p_key_ids, p_endpoints, p_keys) WITH ORDINALITY AS u(key_id, endpoint, key, ord)
    LEFT JOIN ledger.api_keys k ON k.key_id = u.key_id;
    PERFORM set_config('ledger.auth', '', true);
    FOREACH i IN ARRAY coalesce(v_order, '{}') LOOP
      RETURN QUERY SELECT i, x.* FROM ledger.authenticate_and_claim(p_key_ids[i], p_secret_sha256s[i], p_roles[i],
                                     p_endpoints[i], p_keys[i], p_request_sha256s[i], p_lock_ms) x;
    END LOOP;
    RETURN;
  END IF;

  FOREACH v_tenant IN ARRAY coalesce(v_tenants, '{}') LOOP
    PERFORM set_config('ledger.tenant_id', v_tenant::text, true);
    -- Step 2: the first request of each (endpoint, key) claims as claim_idempotency_key would.
    WITH firsts AS (
      SELECT DISTINCT ON (r.endpoint, r.key) r.n, r.endpoint, r.key, r.request_sha256
      FROM unnest(v_requests) r
      WHERE r.eligible AND r.tenant_id = v_tenant
      ORDER BY r.endpoint, r.key, r.n),
    made AS (
      INSERT INTO ledger.idempotency_keys AS k (tenant_id, endpoint, key, request_sha256, state, locked_until)
      SELECT v_tenant, f.endpoint, f.key, f.request_sha256, 'in_flight',
             now() + make_interval(secs => p_lock_ms / 1000.0)
      FROM firsts f
      ORDER BY f.endpoint, f.key
      ON CONFLICT ON CONSTRAINT idempotency_keys_pkey DO UPDATE SET locked_until = EXCLUDED.locked_until
        WHERE k.state = 'in_flight' AND k.locked_until < now() AND k.request_sha256 = EXCLUDED.request_sha256
      RETURNING k.endpoint, k.key)
    SELECT coalesce(array_agg(f.n), '{}'), count(*),
           (SELECT count(*) FROM unnest(v_requests) r WHERE r.eligible AND r.tenant_id = v_tenant)
    INTO v_made, v_made_count, v_eligible_count
    FROM made m JOIN firsts f ON f.endpoint = m.endpoint AND f.key = m.key;
    v_claimed := v_claimed || v_made;

    IF v_made_count < v_eligible_count THEN
      -- Step 3: the rows as step 2 left them (a new snapshot), each request judged in turn.
      WITH mine AS (
        SELECT r.n, r.endpoint, r.key, r.request_sha256,
               row_number() OVER (PARTITION BY r.endpoint, r.key ORDER BY r.n) AS pos
        FROM unnest(v_requests) r
        WHERE r.eligible AND r.tenant_id = v_tenant),
      existing AS (
        SELECT ik.endpoint, ik.key, ik.request_sha256, ik.state, ik.response_status, ik.response_body,
               ik.locked_until < now() AS lapsed
        FROM ledger.idempotency_keys ik
        WHERE ik.tenant_id = v_tenant AND (ik.endpoint, ik.key) IN (SELECT m.endpoint, m.key FROM mine m)),
      judged AS (
        SELECT m.n, m.pos, m.endpoint, m.key, m.request_sha256, x.endpoint IS NOT NULL AS present,
               x.request_sha256 AS row_sha256, x.state, x.response_status, x.response_body, x.lapsed,
               (x.state = 'in_flight' AND x.request_sha256 = m.request_sha256) AS matches,
               -- an earlier request of this (endpoint, key) claimed it in step 3 (or in step 2: then
               -- the row read is the claimed one, and either way its locked_until is the new one)
               coalesce(bool_or(x.state = 'in_flight' AND x.request_sha256 = m.request_sha256 AND x.lapsed)
                          OVER (PARTITION BY m.endpoint, m.key ORDER BY m.n
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), false) AS earlier
        FROM mine m LEFT JOIN existing x ON x.endpoint = m.endpoint AND x.key = m.key),
      decided AS (
        SELECT j.*,
               CASE WHEN j.pos = 1 THEN j.n = ANY (v_made)
                    ELSE coalesce(j.matches AND CASE WHEN j.earlier THEN v_lapses ELSE j.lapsed END, false)
               END AS claims
        FROM judged j),
      taken AS (  -- a lapsed in-flight row taken over by a later request of the batch, as its lone call would
        INSERT INTO ledger.idempotency_keys AS k (tenant_id, endpoint, key, request_sha256, state, locked_until)
        SELECT v_tenant, d.endpoint, d.key, d.request_sha256, 'in_flight',
               now() + make_interval(secs => p_lock_ms / 1000.0)
        FROM decided d
        WHERE d.pos > 1 AND d.claims AND NOT d.earlier
        ORDER BY d.endpoint, d.key
        ON CONFLICT ON CONSTRAINT idempotency_keys_pkey DO UPDATE SET locked_until = EXCLUDED.locked_until
          WHERE k.state = 'in_flight' AND k.locked_until < now() AND k.request_sha256 = EXCLUDED.request_sha256
        RETURNING 1)
      SELECT v_n || array_agg(d.n),
             v_c || array_agg(CASE WHEN d.claims THEN true WHEN d.present THEN false END),
             v_h || array_agg(CASE WHEN d.claims THEN d.request_sha256 ELSE d.row_sha256 END),
             v_s || array_agg(CASE WHEN d.claims THEN 'in_flight' ELSE d.state END),
             v_st || array_agg(CASE WHEN NOT d.claims THEN d.response_status END),
             v_b || array_agg(CASE WHEN NOT d.claims THEN d.response_body END)
      INTO v_n, v_c, v_h, v_s, v_st, v_b
      FROM decided d;
    END IF;
  END LOOP;
  IF v_tenants IS NOT NULL THEN
    PERFORM set_config('ledger.tenant_id', '', true);
  END IF;

  RETURN QUERY
    SELECT r.ord, r.key_id, r.tenant_id, r.role, r.secret_sha256, r.expired, r.revoked, r.tenant_status,
           r.parent_id, r.parent_status,
           CASE WHEN o.n IS NOT NULL THEN o.claimed WHEN r.n = ANY (v_claimed) THEN true END,
           CASE WHEN o.n IS NOT NULL THEN o.sha WHEN r.n = ANY (v_claimed) THEN r.request_sha256 END,
           CASE WHEN o.n IS NOT NULL THEN o.state WHEN r.n = ANY (v_claimed) THEN 'in_flight' END,
           o.status, o.body
    FROM unnest(v_requests) r
    LEFT JOIN unnest(v_n, v_c, v_h, v_s, v_st, v_b) AS o(n, claimed, sha, state, status, body) ON o.n = r.n
    ORDER BY r.n;
END $function$;
