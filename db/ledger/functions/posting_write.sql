-- The journal of accepted postings in one statement: per posting (arrays p_t_*) its transaction
-- row, its hold outbox row when pending and its idempotency record with its 201 body; per leg
-- (arrays p_e_*, p_e_posting = the leg's posting's position in p_t_*) the entry and, for a
-- posted transaction, its committed leg.
CREATE OR REPLACE FUNCTION ledger.posting_write(p_tenant uuid, p_t_ids uuid[], p_t_pending boolean[], p_t_descriptions text[], p_t_external_ids text[], p_t_metadata jsonb[], p_t_effective_at timestamp with time zone[], p_t_expires_at timestamp with time zone[], p_t_idempotency_endpoints text[], p_t_idempotency_keys text[], p_t_response_statuses smallint[], p_t_bodies jsonb[], p_e_posting integer[], p_e_line_nos integer[], p_e_ids uuid[], p_e_account_ids uuid[], p_e_assets uuid[], p_e_directions text[], p_e_minors numeric[])
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_now timestamptz := ledger.now_ms();
  v_done record;
BEGIN
  WITH posting AS (
    SELECT * FROM unnest(p_t_ids, p_t_pending, p_t_descriptions, p_t_external_ids, p_t_metadata, p_t_effective_at,
                         p_t_expires_at, p_t_idempotency_endpoints, p_t_idempotency_keys, p_t_response_statuses,
                         p_t_bodies)
      AS p(id, pending, description, external_id, metadata, effective_at, expires_at, endpoint, key, status, body)),
  txn AS (
    INSERT INTO ledger.transactions (transaction_id, tenant_id, state, pending, description, external_id, metadata,
                                     effective_at, expires_at, created_at, finalized_at)
    SELECT p.id, p_tenant, CASE WHEN p.pending THEN 'pending' ELSE 'committed' END, p.pending, p.description,
           p.external_id, p.metadata, coalesce(p.effective_at, v_now), p.expires_at, v_now,
           CASE WHEN p.pending THEN NULL ELSE v_now END
    FROM posting p
    RETURNING transaction_id, effective_at, finalized_at),
  legs AS (
    INSERT INTO ledger.entries (entry_id, tenant_id, transaction_id, account_id, asset_type_id, line_no, direction,
                                amount_minor, created_at)
    SELECT e.id, p_tenant, p_t_ids[e.posting], e.account_id, e.asset_type_id, e.line_no, e.direction, e.minor, v_now
    FROM unnest(p_e_posting, p_e_line_nos, p_e_ids, p_e_account_ids, p_e_assets, p_e_directions, p_e_minors)
      AS e(posting, line_no, id, account_id, asset_type_id, direction, minor)
    RETURNING entry_id, transaction_id, account_id, direction, amount_minor),
  committed AS (
    INSERT INTO ledger.committed_legs (entry_id, tenant_id, account_id, effective_at, finalized_at, debit_minor, credit_minor)
    SELECT l.entry_id, p_tenant, l.account_id, t.effective_at, t.finalized_at,
           CASE WHEN l.direction = 'debit' THEN l.amount_minor ELSE 0 END,
           CASE WHEN l.direction = 'credit' THEN l.amount_minor ELSE 0 END
    FROM legs l JOIN txn t USING (transaction_id) WHERE t.finalized_at IS NOT NULL
    RETURNING 1),
  outbox AS (
    INSERT INTO ledger.hold_outbox (transaction_id, tenant_id, expires_at)
    SELECT p.id, p_tenant, p.expires_at FROM posting p WHERE p.pending
    RETURNING 1),
  idempotency AS (
    UPDATE ledger.idempotency_keys k
    SET state = 'completed', response_status = p.status, response_body = p.body
    FROM posting p
    WHERE p.key IS NOT NULL AND k.tenant_id = p_tenant AND k.endpoint = p.endpoint AND k.key = p.key
    RETURNING 1)
  SELECT NULL FROM (SELECT (SELECT count(*) FROM txn), (SELECT count(*) FROM legs), (SELECT count(*) FROM committed),
                           (SELECT count(*) FROM outbox), (SELECT count(*) FROM idempotency)) AS done
  INTO v_done;
END $function$;
