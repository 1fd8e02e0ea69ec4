-- A lone posting in one statement (its own implicit transaction): set the tenant context and
-- lock budget; prepare (posting_prepare); lock the sync accounts and their balance rows in
-- account_id order (posting_lock, the one lock order of the ledger); check rules 2-4 (posting_check);
-- move the counters (posting_move); write the journal (posting_write). A refusal is returned as
-- {error: {...}} after nothing was written; {body: {...}} is the 201 body. Rule 1's backstop, the
-- deferred balance check, runs at the statement's commit.
CREATE OR REPLACE FUNCTION ledger.post_transaction(p_tenant uuid, p_lock_timeout text, p_transaction_id uuid, p_pending boolean, p_description text, p_external_id text, p_metadata jsonb, p_effective_at timestamp with time zone, p_expires_at timestamp with time zone, p_entry_ids uuid[], p_account_ids uuid[], p_directions text[], p_amounts text[], p_idempotency_endpoint text, p_idempotency_key text, p_response_status smallint)
 RETURNS jsonb
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
  v_prepared ledger.posting_prepared;
  v_checked jsonb;
  v_body jsonb;
BEGIN
  PERFORM set_config('ledger.tenant_id', p_tenant::text, true);
  PERFORM set_config('lock_timeout', p_lock_timeout, true);
  v_prepared := ledger.posting_prepare(p_account_ids, p_directions, p_amounts);
  IF v_prepared.error IS NOT NULL THEN RETURN jsonb_build_object('error', v_prepared.error); END IF;
  PERFORM ledger.posting_lock(p_account_ids);
  v_checked := ledger.posting_check(p_pending, p_account_ids, p_directions, v_prepared.minors);
  IF v_checked ? 'error' THEN RETURN v_checked; END IF;
  PERFORM ledger.posting_move(p_pending, p_account_ids, p_directions, v_prepared.minors);
  v_body := ledger.posting_body(p_transaction_id, p_pending, v_checked -> 'accounts',
                                ledger.iso_ms(ledger.now_ms()));
  PERFORM ledger.posting_write(p_tenant, ARRAY[p_transaction_id], ARRAY[p_pending], ARRAY[p_description],
    ARRAY[p_external_id], ARRAY[p_metadata], ARRAY[p_effective_at], ARRAY[p_expires_at],
    ARRAY[p_idempotency_endpoint], ARRAY[p_idempotency_key], ARRAY[p_response_status], ARRAY[v_body],
    array_fill(1, ARRAY[cardinality(p_entry_ids)]),
    ARRAY(SELECT generate_series(1, cardinality(p_entry_ids))),
    p_entry_ids, p_account_ids, v_prepared.assets, p_directions, v_prepared.minors);
  RETURN jsonb_build_object('body', v_body);
END $function$;
