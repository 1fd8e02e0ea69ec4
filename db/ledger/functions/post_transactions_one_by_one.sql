-- A batch of one tenant's postings, one at a time, with exactly the semantics of a lone
-- post_transaction each: the only place that decides a refusal (post_transactions comes here when
-- its set-based check finds that something in the batch would be refused, or when the batch is
-- not one it takes). Parallel arrays: posting i has p_entry_counts[i] entries, taken in order
-- from the flat entry arrays. Returns a JSON array of the postings' results, in order.
--
-- Set the context; prepare each posting (posting_prepare); lock the sync accounts of ALL postings
-- that passed, once, in account_id order (posting_lock: so two batches never deadlock, each takes
-- its whole lock set in the global order before any write; a hot account is locked once per
-- batch); then check and move each posting in input order (posting_check, posting_move), so a
-- posting sees the counters the earlier ones left (its floor check and available_after are those
-- of posting them one after the other); then one posting_write for all accepted postings (its
-- statement triggers, the as-of buckets and the async delta queue, run once per batch). A refusal
-- writes nothing for its posting and does not touch the others.
-- An unexpected error (numeric overflow, a duplicate external_id, a lock timeout) fails the whole
-- statement; the API then posts each posting of that batch alone (no per-posting subtransactions:
-- more than 64 subtransactions in one transaction overflow the backend's subxid cache and slow
-- every other backend's snapshots).
-- One tenant per call: the tenant context (row-level security, and the deferred balance check
-- that runs at COMMIT under it) is the batch's tenant.
CREATE OR REPLACE FUNCTION ledger.post_transactions_one_by_one(p_tenant uuid, p_lock_timeout text, p_transaction_ids uuid[], p_pending boolean[], p_descriptions text[], p_external_ids text[], p_metadata jsonb[], p_effective_at timestamp with time zone[], p_expires_at timestamp with time zone[], p_entry_counts integer[], p_entry_ids uuid[], p_account_ids uuid[], p_directions text[], p_amounts text[], p_idempotency_endpoints text[], p_idempotency_keys text[], p_response_statuses smallint[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
  v_n integer := coalesce(cardinality(p_transaction_ids), 0);
  v_prepared ledger.posting_prepared[] := '{}';
  v_firsts integer[] := '{}';
  v_results jsonb[] := '{}';
  v_lock uuid[] := '{}';
  v_checked jsonb;
  v_first integer := 1;
  v_last integer;
  v_ok integer[] := '{}';
  v_bodies jsonb[] := '{}';
  v_e_posting integer[] := '{}';
  v_e_line_nos integer[] := '{}';
  v_e_assets uuid[] := '{}';
  v_e_minors numeric[] := '{}';
  v_e_index integer[] := '{}';
  v_created_at text := ledger.iso_ms(ledger.now_ms());
BEGIN
  IF coalesce(cardinality(p_entry_ids), 0) <> (SELECT coalesce(sum(c), 0) FROM unnest(p_entry_counts) AS c) THEN
    RAISE EXCEPTION 'post_transactions: entry counts do not add up to the entries given';
  END IF;
  PERFORM set_config('ledger.tenant_id', p_tenant::text, true);
  PERFORM set_config('lock_timeout', p_lock_timeout, true);
  FOR i IN 1 .. v_n LOOP
    v_firsts[i] := v_first;
    v_last := v_first + p_entry_counts[i] - 1;
    v_prepared[i] := ledger.posting_prepare(p_account_ids[v_first:v_last], p_directions[v_first:v_last],
                                            p_amounts[v_first:v_last]);
    IF v_prepared[i].error IS NULL THEN v_lock := v_lock || p_account_ids[v_first:v_last]; END IF;
    v_first := v_last + 1;
  END LOOP;
  PERFORM ledger.posting_lock(v_lock);
  FOR i IN 1 .. v_n LOOP
    v_first := v_firsts[i];
    v_last := v_first + p_entry_counts[i] - 1;
    IF v_prepared[i].error IS NOT NULL THEN
      v_results[i] := jsonb_build_object('error', v_prepared[i].error);
      CONTINUE;
    END IF;
    v_checked := ledger.posting_check(p_pending[i], p_account_ids[v_first:v_last], p_directions[v_first:v_last],
                                      v_prepared[i].minors);
    IF v_checked ? 'error' THEN
      v_results[i] := v_checked;
      CONTINUE;
    END IF;
    PERFORM ledger.posting_move(p_pending[i], p_account_ids[v_first:v_last], p_directions[v_first:v_last],
                                v_prepared[i].minors);
    v_ok := v_ok || i;
    v_bodies := v_bodies || ledger.posting_body(p_transaction_ids[i], p_pending[i], v_checked -> 'accounts',
                                                v_created_at);
    v_results[i] := jsonb_build_object('body', v_bodies[cardinality(v_bodies)]);
    v_e_posting := v_e_posting || array_fill(cardinality(v_ok), ARRAY[p_entry_counts[i]]);
    v_e_line_nos := v_e_line_nos || ARRAY(SELECT generate_series(1, p_entry_counts[i]));
    v_e_index := v_e_index || ARRAY(SELECT generate_series(v_first, v_last));
    v_e_assets := v_e_assets || v_prepared[i].assets;
    v_e_minors := v_e_minors || v_prepared[i].minors;
  END LOOP;
  IF cardinality(v_ok) > 0 THEN
    PERFORM ledger.posting_write(p_tenant,
      ARRAY(SELECT p_transaction_ids[k] FROM unnest(v_ok) WITH ORDINALITY AS o(k, n) ORDER BY n),
      ARRAY(SELECT p_pending[k] FROM unnest(v_ok) WITH ORDINALITY AS o(k, n) ORDER BY n),
      ARRAY(SELECT p_descriptions[k] FROM unnest(v_ok) WITH ORDINALITY AS o(k, n) ORDER BY n),
      ARRAY(SELECT p_external_ids[k] FROM unnest(v_ok) WITH ORDINALITY AS o(k, n) ORDER BY n),
      ARRAY(SELECT p_metadata[k] FROM unnest(v_ok) WITH ORDINALITY AS o(k, n) ORDER BY n),
      ARRAY(SELECT p_effective_at[k] FROM unnest(v_ok) WITH ORDINALITY AS o(k, n) ORDER BY n),
      ARRAY(SELECT p_expires_at[k] FROM unnest(v_ok) WITH ORDINALITY AS o(k, n) ORDER BY n),
      ARRAY(SELECT p_idempotency_endpoints[k] FROM unnest(v_ok) WITH ORDINALITY AS o(k, n) ORDER BY n),
      ARRAY(SELECT p_idempotency_keys[k] FROM unnest(v_ok) WITH ORDINALITY AS o(k, n) ORDER BY n),
      ARRAY(SELECT p_response_statuses[k] FROM unnest(v_ok) WITH ORDINALITY AS o(k, n) ORDER BY n),
      v_bodies, v_e_posting, v_e_line_nos,
      ARRAY(SELECT p_entry_ids[k] FROM unnest(v_e_index) WITH ORDINALITY AS o(k, n) ORDER BY n),
      ARRAY(SELECT p_account_ids[k] FROM unnest(v_e_index) WITH ORDINALITY AS o(k, n) ORDER BY n),
      v_e_assets,
      ARRAY(SELECT p_directions[k] FROM unnest(v_e_index) WITH ORDINALITY AS o(k, n) ORDER BY n),
      v_e_minors);
  END IF;
  RETURN to_jsonb(v_results);
END $function$;
