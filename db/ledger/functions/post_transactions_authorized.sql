-- A batch of postings together with the checks of the keys that sent them and the claims of their
-- Idempotency-Keys, in one statement and one commit (the posting route's common case).
--
-- The API calls this only for requests whose key it has authenticated before: it knows the
-- key's tenant, role and secret hash, which never change (services/ledger/credentials.ts remembers
-- them). What can change is checked here, under the same snapshot as the posting: per request,
-- the key exists in this tenant with this role and secret hash, is neither revoked nor expired,
-- and its tenant (and parent) is active: authenticate_and_claim's test of a credential. Then the
-- first request of each Idempotency-Key in the batch claims it (the same row a claim makes, in
-- key order as every claim takes its rows); a key that already has a row is left alone. The
-- claimed postings go to post_transactions, which completes their keys with their 201 bodies.
--
-- Per request it answers what post_transactions answers ({"body"} or {"error"}: a refused
-- posting's key stays claimed in flight, for the API to record the refusal or release it as it
-- does for every refusal), or {"fallback": "credential" | "key"} when its key failed the test or
-- its Idempotency-Key was already taken (by an earlier request, by another request of this
-- batch, or by a concurrent transaction, whose commit this waits for): nothing was written for
-- it, and the API answers it on the general path (authenticate, claim, post), which gives the
-- refusal, the replay or the in-flight answer.
CREATE OR REPLACE FUNCTION ledger.post_transactions_authorized(p_tenant uuid, p_lock_timeout text, p_role text, p_endpoint text, p_lock_ms integer, p_response_status smallint, p_key_ids uuid[], p_secret_sha256s bytea[], p_keys text[], p_request_sha256s bytea[], p_transaction_ids uuid[], p_pending boolean[], p_descriptions text[], p_external_ids text[], p_metadata jsonb[], p_effective_at timestamp with time zone[], p_expires_at timestamp with time zone[], p_entry_counts integer[], p_entry_ids uuid[], p_account_ids uuid[], p_directions text[], p_amounts text[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
  v_n integer := coalesce(cardinality(p_transaction_ids), 0);
  v_authorized integer[];
  v_claimed integer[];
  v_entries integer[];
  v_posted jsonb;
BEGIN
  IF v_n = 0 THEN RETURN '[]'::jsonb; END IF;

  PERFORM set_config('ledger.auth', 'on', true);
  SELECT coalesce(array_agg(u.ord::integer), '{}') INTO v_authorized
  FROM unnest(p_key_ids, p_secret_sha256s) WITH ORDINALITY AS u(key_id, secret_sha256, ord)
  JOIN ledger.api_keys k ON k.key_id = u.key_id
  JOIN ledger.tenants t ON t.tenant_id = k.tenant_id
  LEFT JOIN ledger.tenants p ON p.tenant_id = t.parent_id
  WHERE k.tenant_id = p_tenant AND k.role = p_role AND k.secret_sha256 = u.secret_sha256
    AND k.revoked_at IS NULL AND NOT (k.expires_at IS NOT NULL AND k.expires_at <= now())
    AND t.status = 'active' AND (t.parent_id IS NULL OR p.status = 'active');
  PERFORM set_config('ledger.auth', '', true);

  PERFORM set_config('ledger.tenant_id', p_tenant::text, true);
  WITH firsts AS (
    SELECT DISTINCT ON (u.key) u.ord::integer AS ord, u.key, u.request_sha256
    FROM unnest(p_keys, p_request_sha256s) WITH ORDINALITY AS u(key, request_sha256, ord)
    WHERE u.ord = ANY (v_authorized)
    ORDER BY u.key, u.ord),
  made AS (
    INSERT INTO ledger.idempotency_keys (tenant_id, endpoint, key, request_sha256, state, locked_until)
    SELECT p_tenant, p_endpoint, f.key, f.request_sha256, 'in_flight', now() + make_interval(secs => p_lock_ms / 1000.0)
    FROM firsts f
    ORDER BY f.key
    ON CONFLICT ON CONSTRAINT idempotency_keys_pkey DO NOTHING
    RETURNING key)
  SELECT coalesce(array_agg(f.ord ORDER BY f.ord), '{}') INTO v_claimed
  FROM made m JOIN firsts f USING (key);

  IF cardinality(v_claimed) = v_n THEN
    v_posted := ledger.post_transactions(p_tenant, p_lock_timeout, p_transaction_ids, p_pending, p_descriptions,
      p_external_ids, p_metadata, p_effective_at, p_expires_at, p_entry_counts, p_entry_ids, p_account_ids,
      p_directions, p_amounts, array_fill(p_endpoint, ARRAY[v_n]), p_keys, array_fill(p_response_status, ARRAY[v_n]));
  ELSIF cardinality(v_claimed) > 0 THEN
    -- The entries of the claimed postings, in order (posting i's are its p_entry_counts[i] from its start).
    SELECT array_agg(s.start + g.k - 1 ORDER BY s.i, g.k) INTO v_entries
    FROM (SELECT c.i, c.count, sum(c.count) OVER (ORDER BY c.i) - c.count + 1 AS start
          FROM unnest(p_entry_counts) WITH ORDINALITY AS c(count, i)) s
    CROSS JOIN LATERAL generate_series(1, s.count) AS g(k)
    WHERE s.i = ANY (v_claimed);
    v_posted := ledger.post_transactions(p_tenant, p_lock_timeout,
      ARRAY(SELECT p_transaction_ids[i] FROM unnest(v_claimed) AS i),
      ARRAY(SELECT p_pending[i] FROM unnest(v_claimed) AS i),
      ARRAY(SELECT p_descriptions[i] FROM unnest(v_claimed) AS i),
      ARRAY(SELECT p_external_ids[i] FROM unnest(v_claimed) AS i),
      ARRAY(SELECT p_metadata[i] FROM unnest(v_claimed) AS i),
      ARRAY(SELECT p_effective_at[i] FROM unnest(v_claimed) AS i),
      ARRAY(SELECT p_expires_at[i] FROM unnest(v_claimed) AS i),
      ARRAY(SELECT p_entry_counts[i] FROM unnest(v_claimed) AS i),
      ARRAY(SELECT p_entry_ids[e] FROM unnest(v_entries) AS e),
      ARRAY(SELECT p_account_ids[e] FROM unnest(v_entries) AS e),
      ARRAY(SELECT p_directions[e] FROM unnest(v_entries) AS e),
      ARRAY(SELECT p_amounts[e] FROM unnest(v_entries) AS e),
      array_fill(p_endpoint, ARRAY[cardinality(v_claimed)]),
      ARRAY(SELECT p_keys[i] FROM unnest(v_claimed) AS i),
      array_fill(p_response_status, ARRAY[cardinality(v_claimed)]));
  END IF;

  RETURN (SELECT jsonb_agg(CASE WHEN NOT g.i = ANY (v_authorized) THEN '{"fallback": "credential"}'::jsonb
                                WHEN c.n IS NULL THEN '{"fallback": "key"}'::jsonb
                                ELSE v_posted -> (c.n::integer - 1) END
                           ORDER BY g.i)
          FROM generate_series(1, v_n) AS g(i)
          LEFT JOIN unnest(v_claimed) WITH ORDINALITY AS c(i, n) ON c.i = g.i);
END $function$;
