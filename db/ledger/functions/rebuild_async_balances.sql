-- Repair: async balance rows recomputed from the journal, and their queued deltas dropped (the
-- journal already holds what they describe). The accounts' balance rows are locked first
-- (waiting for any consumer), then one statement on a fresh snapshot recomputes and deletes
-- exactly the deltas visible in it; deltas committed after it stay queued and the journal sums
-- do not include them either. p_tenant null: every tenant.
CREATE OR REPLACE FUNCTION ledger.rebuild_async_balances(p_tenant uuid)
 RETURNS TABLE(accounts integer, drifted integer, dropped_deltas integer)
 LANGUAGE plpgsql
AS $function$
DECLARE
  v_accounts uuid[];
  v_drifted integer;
  v_dropped integer;
BEGIN
  PERFORM set_config('ledger.system', 'on', true);
  SELECT array_agg(c.account_id) INTO v_accounts
  FROM (SELECT b.account_id FROM ledger.balances b JOIN ledger.accounts a USING (account_id)
        WHERE a.balance_tracking = 'async' AND (p_tenant IS NULL OR a.tenant_id = p_tenant)
        ORDER BY b.account_id
        FOR UPDATE OF b) c;
  IF v_accounts IS NULL THEN
    PERFORM set_config('ledger.system', '', true);
    RETURN QUERY SELECT 0, 0, 0;
    RETURN;
  END IF;

  WITH dropped AS (
    DELETE FROM ledger.async_balance_deltas d WHERE d.account_id = ANY (v_accounts) RETURNING 1),
  journal AS (
    SELECT a.account_id,
           coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'committed' AND e.direction = 'debit'), 0) AS pd,
           coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'committed' AND e.direction = 'credit'), 0) AS pc,
           coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'pending' AND e.direction = 'debit'), 0) AS hd,
           coalesce(sum(e.amount_minor) FILTER (WHERE t.state = 'pending' AND e.direction = 'credit'), 0) AS hc
    FROM unnest(v_accounts) AS a(account_id)
    LEFT JOIN ledger.entries e ON e.account_id = a.account_id
    LEFT JOIN ledger.transactions t ON t.transaction_id = e.transaction_id
    GROUP BY a.account_id),
  -- Read in the statement's snapshot, i.e. as things were before `moved` and `dropped`: an
  -- account whose row plus queued deltas differs from its journal had drifted (a bug or a
  -- manual edit); queued deltas alone are not drift.
  queued AS (
    SELECT d.account_id, sum(d.posted_debits) AS pd, sum(d.posted_credits) AS pc,
           sum(d.pending_debits) AS hd, sum(d.pending_credits) AS hc
    FROM ledger.async_balance_deltas d WHERE d.account_id = ANY (v_accounts) GROUP BY d.account_id),
  drift AS (
    SELECT count(*) AS n
    FROM journal j JOIN ledger.balances b ON b.account_id = j.account_id LEFT JOIN queued q ON q.account_id = j.account_id
    WHERE (b.posted_debits + coalesce(q.pd, 0), b.posted_credits + coalesce(q.pc, 0),
           b.pending_debits + coalesce(q.hd, 0), b.pending_credits + coalesce(q.hc, 0))
          IS DISTINCT FROM (j.pd, j.pc, j.hd, j.hc)),
  moved AS (
    UPDATE ledger.balances b
    SET posted_debits = j.pd, posted_credits = j.pc, pending_debits = j.hd, pending_credits = j.hc,
        version = b.version + CASE WHEN (b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits)
                                        IS DISTINCT FROM (j.pd, j.pc, j.hd, j.hc) THEN 1 ELSE 0 END,
        rolled_up_at = ledger.now_ms()
    FROM journal j
    WHERE b.account_id = j.account_id
    RETURNING 1)
  SELECT (SELECT n FROM drift), (SELECT count(*) FROM dropped)
  INTO v_drifted, v_dropped;

  PERFORM set_config('ledger.system', '', true);
  RETURN QUERY SELECT cardinality(v_accounts), v_drifted, v_dropped;
END $function$;
