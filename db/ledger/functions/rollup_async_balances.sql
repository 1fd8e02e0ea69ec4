-- One batch of the rollup: at most p_rows queued deltas, oldest first, applied to their accounts.
-- Work is claimed per account (its balance row, FOR UPDATE SKIP LOCKED), never per delta, so a
-- consumer that drains an account knows it saw all of that account's queue and can advance
-- rolled_up_at truthfully; concurrent consumers skip each other's accounts instead of waiting.
-- The second statement runs on a snapshot taken after the locks, so any consumer that held one
-- of these accounts before has committed (its deletes and balance moves are both visible).
-- rolled_up_at = this transaction's start when the account's queue was drained: every change
-- acknowledged before that instant had committed before this snapshot and is now in the row.
CREATE OR REPLACE FUNCTION ledger.rollup_async_balances(p_rows integer)
 RETURNS TABLE(accounts integer, deltas integer, full_batch boolean)
 LANGUAGE plpgsql
 SET enable_seqscan TO 'off'
 SET enable_bitmapscan TO 'off'
AS $function$
DECLARE
  v_accounts uuid[];
  v_accounts_n integer;
  v_deltas integer;
BEGIN
  PERFORM set_config('ledger.system', 'on', true);
  SELECT array_agg(c.account_id) INTO v_accounts
  FROM (SELECT b.account_id FROM ledger.balances b
        WHERE b.account_id IN (SELECT d.account_id FROM ledger.async_balance_deltas d ORDER BY d.delta_id LIMIT p_rows)
        ORDER BY b.account_id
        FOR UPDATE SKIP LOCKED) c;
  IF v_accounts IS NULL THEN
    PERFORM set_config('ledger.system', '', true);
    RETURN QUERY SELECT 0, 0, false;
    RETURN;
  END IF;

  -- The same head as above, re-read on this snapshot, less the rows of accounts not claimed:
  -- every row of a claimed account up to the head's last id is in it, so rows past that id are
  -- exactly what this batch leaves of the account.
  WITH top AS MATERIALIZED (
    SELECT d.delta_id, d.account_id FROM ledger.async_balance_deltas d ORDER BY d.delta_id LIMIT p_rows),
  head AS MATERIALIZED (
    SELECT t.delta_id FROM top t WHERE t.account_id = ANY (v_accounts)),
  taken AS (
    DELETE FROM ledger.async_balance_deltas d USING head h WHERE d.delta_id = h.delta_id
    RETURNING d.delta_id, d.account_id, d.posted_debits, d.posted_credits, d.pending_debits, d.pending_credits),
  sums AS (
    SELECT t.account_id, sum(t.posted_debits) AS pd, sum(t.posted_credits) AS pc,
           sum(t.pending_debits) AS hd, sum(t.pending_credits) AS hc, count(*) AS n
    FROM taken t GROUP BY t.account_id),
  cutoff AS MATERIALIZED (SELECT coalesce(max(t.delta_id), 0) AS id FROM top t),
  moved AS (
    UPDATE ledger.balances b
    SET posted_debits = b.posted_debits + coalesce(s.pd, 0), posted_credits = b.posted_credits + coalesce(s.pc, 0),
        pending_debits = b.pending_debits + coalesce(s.hd, 0), pending_credits = b.pending_credits + coalesce(s.hc, 0),
        version = b.version + CASE WHEN coalesce(s.pd, 0) <> 0 OR coalesce(s.pc, 0) <> 0 OR coalesce(s.hd, 0) <> 0
                                        OR coalesce(s.hc, 0) <> 0 THEN 1 ELSE 0 END,
        -- Rows of this account past the batch (same snapshot): not drained, keep the old bound.
        rolled_up_at = CASE WHEN EXISTS (SELECT 1 FROM ledger.async_balance_deltas r
                                         WHERE r.account_id = b.account_id AND r.delta_id > (SELECT c.id FROM cutoff c))
                            THEN b.rolled_up_at ELSE greatest(b.rolled_up_at, ledger.now_ms()) END
    FROM unnest(v_accounts) AS a(account_id) LEFT JOIN sums s USING (account_id)
    WHERE b.account_id = a.account_id
    RETURNING s.n)
  SELECT (SELECT count(*) FROM moved), coalesce((SELECT sum(m.n) FROM moved m), 0)
  INTO v_accounts_n, v_deltas;

  PERFORM set_config('ledger.system', '', true);
  RETURN QUERY SELECT v_accounts_n, v_deltas, v_deltas >= p_rows;
END $function$;
