-- A batch of one tenant's postings (parallel arrays: posting i has p_entry_counts[i] entries,
-- taken in order from the flat entry arrays), in a few set-based statements when nothing in it is
-- refused (the common case), instead of four statements per posting. Returns a JSON array of the
-- postings' results, in order.
--
-- post_transactions_one_by_one prepares, checks and moves each posting in turn (posting_prepare,
-- posting_check, posting_move: ~0.45 ms of Postgres per posting under load, most of it statement
-- start-up and plpgsql array appends), and is the only place that decides a refusal. This
-- function first asks, for the whole batch at once, whether posting them one by one would refuse
-- anything:
--   1. prepare: every account known (to this tenant), every amount a positive plain decimal at
--      its account's scale of at most 38 digits, every posting balanced per asset type with both
--      sides present (posting_prepare's common-case test, over all legs of the batch at once);
--   2. lock the sync accounts of the batch in account_id order (posting_lock);
--   3. check: no account of the batch frozen or closed, and no floor breached, where posting i
--      sees each account's counters as postings 1..i-1 left them (a running sum per account
--      ordered by posting: the same counters the one-by-one loop would have, since it accepts
--      every posting too);
-- and, if nothing would be refused, moves the counters once per account (version + 1 per posting
-- that touched it, as one posting_move per posting did), builds each posting's 201 body with its
-- available_after per sync account, and writes the journal with posting_write. Otherwise nothing
-- has been written yet, and the batch goes to post_transactions_one_by_one (the locks already
-- held are the same set, so it cannot deadlock), whose results are the answer. Results are
-- identical either way; test/integration/ledger/batching.test.ts runs batches through both.
CREATE OR REPLACE FUNCTION ledger.post_transactions(p_tenant uuid, p_lock_timeout text, p_transaction_ids uuid[], p_pending boolean[], p_descriptions text[], p_external_ids text[], p_metadata jsonb[], p_effective_at timestamp with time zone[], p_expires_at timestamp with time zone[], p_entry_counts integer[], p_entry_ids uuid[], p_account_ids uuid[], p_directions text[], p_amounts text[], p_idempotency_endpoints text[], p_idempotency_keys text[], p_response_statuses smallint[])
 RETURNS jsonb
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
  v_n integer := coalesce(cardinality(p_transaction_ids), 0);
  v_created_at text := ledger.iso_ms(ledger.now_ms());
  v_accepted boolean;
  v_e_posting integer[];
  v_e_line_nos integer[];
  v_e_assets uuid[];
  v_e_minors numeric[];
  v_accounts jsonb[];
  v_bodies jsonb[];
BEGIN
  IF v_n = 0 OR coalesce(cardinality(p_entry_ids), 0) <> (SELECT sum(c) FROM unnest(p_entry_counts) AS c)
     OR EXISTS (SELECT 1 FROM unnest(p_entry_counts) AS c WHERE c IS NULL OR c < 1) THEN
    -- Not a batch this path takes: the one-by-one function answers (or raises) as it always did.
    RETURN ledger.post_transactions_one_by_one(p_tenant, p_lock_timeout, p_transaction_ids, p_pending,
      p_descriptions, p_external_ids, p_metadata, p_effective_at, p_expires_at, p_entry_counts, p_entry_ids,
      p_account_ids, p_directions, p_amounts, p_idempotency_endpoints, p_idempotency_keys, p_response_statuses);
  END IF;
  PERFORM set_config('ledger.tenant_id', p_tenant::text, true);
  PERFORM set_config('lock_timeout', p_lock_timeout, true);

  -- Each leg's posting and its line number within it.
  SELECT array_agg(p.i ORDER BY p.i, s.k), array_agg(s.k ORDER BY p.i, s.k)
  INTO v_e_posting, v_e_line_nos
  FROM unnest(p_entry_counts) WITH ORDINALITY AS p(c, i) CROSS JOIN LATERAL generate_series(1, p.c) AS s(k);

  -- 1. Prepare every leg (the same test as posting_prepare's common case, keep the two alike).
  WITH legs AS (
    SELECT u.n, u.i, u.direction, a.asset_type_id AS asset, t.scale, m,
           (m IS NOT NULL AND m[1] IS NULL AND length(coalesce(m[3], '')) <= t.scale
            AND length(coalesce(nullif(ltrim(m[2] || rpad(coalesce(m[3], ''), t.scale, '0'), '0'), ''), '0')) <= 38)
             AS well_formed
    FROM unnest(v_e_posting, p_account_ids, p_directions, p_amounts) WITH ORDINALITY AS u(i, id, direction, amount, n)
    LEFT JOIN ledger.accounts a ON a.account_id = u.id
    LEFT JOIN ledger.asset_types t ON t.asset_type_id = a.asset_type_id
    LEFT JOIN LATERAL regexp_match(u.amount, '^(-)?([0-9]+)(?:\.([0-9]+))?$') AS m ON true),
  valued AS (
    SELECT l.n, l.i, l.direction, l.asset, l.well_formed,
           CASE WHEN l.well_formed THEN (l.m[2] || rpad(coalesce(l.m[3], ''), l.scale, '0'))::numeric END AS minor
    FROM legs l),
  sides AS (
    SELECT v.i, v.asset, coalesce(sum(v.minor) FILTER (WHERE v.direction = 'debit'), 0) AS d,
           coalesce(sum(v.minor) FILTER (WHERE v.direction = 'credit'), 0) AS c
    FROM valued v GROUP BY v.i, v.asset)
  SELECT coalesce((SELECT bool_and(v.asset IS NOT NULL AND v.well_formed AND v.minor > 0) FROM valued v), false)
           AND NOT EXISTS (SELECT 1 FROM sides s WHERE s.d <> s.c OR s.d = 0),
         (SELECT array_agg(v.asset ORDER BY v.n) FROM valued v),
         (SELECT array_agg(v.minor ORDER BY v.n) FROM valued v)
  INTO v_accepted, v_e_assets, v_e_minors;

  IF v_accepted THEN
    -- 2. Lock.
    PERFORM ledger.posting_lock(p_account_ids);

    -- 3. Check under the locks: each posting against the counters the earlier ones leave.
    WITH deltas AS (
      SELECT l.i, l.id,
             coalesce(sum(l.minor) FILTER (WHERE NOT p_pending[l.i] AND l.direction = 'debit'), 0) AS pd,
             coalesce(sum(l.minor) FILTER (WHERE NOT p_pending[l.i] AND l.direction = 'credit'), 0) AS pc,
             coalesce(sum(l.minor) FILTER (WHERE p_pending[l.i] AND l.direction = 'debit'), 0) AS hd,
             coalesce(sum(l.minor) FILTER (WHERE p_pending[l.i] AND l.direction = 'credit'), 0) AS hc
      FROM unnest(v_e_posting, p_account_ids, p_directions, v_e_minors) AS l(i, id, direction, minor)
      GROUP BY l.i, l.id),
    counters AS (
      -- Each sync account's counters before posting i and after it.
      SELECT d.i, a.account_id, a.normal_side, a.floor_minor, t.scale,
             b.posted_debits + coalesce(sum(d.pd) OVER earlier, 0) AS pd0,
             b.posted_credits + coalesce(sum(d.pc) OVER earlier, 0) AS pc0,
             b.pending_debits + coalesce(sum(d.hd) OVER earlier, 0) AS hd0,
             b.pending_credits + coalesce(sum(d.hc) OVER earlier, 0) AS hc0,
             d.pd, d.pc, d.hd, d.hc
      FROM deltas d
      JOIN ledger.accounts a ON a.account_id = d.id AND a.balance_tracking = 'sync'
      JOIN ledger.balances b ON b.account_id = d.id
      JOIN ledger.asset_types t ON t.asset_type_id = a.asset_type_id
      WINDOW earlier AS (PARTITION BY d.id ORDER BY d.i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)),
    available AS (
      SELECT c.i, c.account_id, c.floor_minor, c.scale,
             CASE WHEN c.normal_side = 'debit' THEN c.pd0 - c.pc0 - c.hc0
                  ELSE c.pc0 - c.pd0 - c.hd0 END AS before,
             CASE WHEN c.normal_side = 'debit' THEN (c.pd0 + c.pd) - (c.pc0 + c.pc) - (c.hc0 + c.hc)
                  ELSE (c.pc0 + c.pc) - (c.pd0 + c.pd) - (c.hd0 + c.hd) END AS after
      FROM counters c),
    per_posting AS (
      SELECT v.i, jsonb_agg(jsonb_build_object('account_id', v.account_id,
                              'available_after_minor', v.after::text,
                              'available_after', ledger.minor_to_decimal(v.after, v.scale))
                            ORDER BY v.account_id) AS accounts
      FROM available v GROUP BY v.i)
    SELECT NOT EXISTS (SELECT 1 FROM ledger.accounts a
                       WHERE a.account_id = ANY (p_account_ids) AND a.status <> 'active')
             AND NOT EXISTS (SELECT 1 FROM available v
                             WHERE v.floor_minor IS NOT NULL AND v.after < v.before AND v.after < v.floor_minor),
           (SELECT array_agg(coalesce(pp.accounts, '[]'::jsonb) ORDER BY g.i)
            FROM generate_series(1, v_n) AS g(i) LEFT JOIN per_posting pp ON pp.i = g.i)
    INTO v_accepted, v_accounts;
  END IF;

  IF NOT v_accepted THEN
    -- Something is refused: the one-by-one path decides what (nothing is written yet).
    RETURN ledger.post_transactions_one_by_one(p_tenant, p_lock_timeout, p_transaction_ids, p_pending,
      p_descriptions, p_external_ids, p_metadata, p_effective_at, p_expires_at, p_entry_counts, p_entry_ids,
      p_account_ids, p_directions, p_amounts, p_idempotency_endpoints, p_idempotency_keys, p_response_statuses);
  END IF;

  -- Every posting is accepted: the counters once per account, then the journal.
  UPDATE ledger.balances b
  SET posted_debits = b.posted_debits + d.pd, posted_credits = b.posted_credits + d.pc,
      pending_debits = b.pending_debits + d.hd, pending_credits = b.pending_credits + d.hc,
      version = b.version + d.postings
  FROM (SELECT l.id,
               coalesce(sum(l.minor) FILTER (WHERE NOT p_pending[l.i] AND l.direction = 'debit'), 0) AS pd,
               coalesce(sum(l.minor) FILTER (WHERE NOT p_pending[l.i] AND l.direction = 'credit'), 0) AS pc,
               coalesce(sum(l.minor) FILTER (WHERE p_pending[l.i] AND l.direction = 'debit'), 0) AS hd,
               coalesce(sum(l.minor) FILTER (WHERE p_pending[l.i] AND l.direction = 'credit'), 0) AS hc,
               count(DISTINCT l.i) AS postings
        FROM unnest(v_e_posting, p_account_ids, p_directions, v_e_minors) AS l(i, id, direction, minor)
        JOIN ledger.accounts a ON a.account_id = l.id AND a.balance_tracking = 'sync'
        GROUP BY l.id) d
  WHERE b.account_id = d.id;

  SELECT array_agg(ledger.posting_body(p_transaction_ids[g.i], p_pending[g.i], v_accounts[g.i], v_created_at)
                   ORDER BY g.i)
  INTO v_bodies
  FROM generate_series(1, v_n) AS g(i);

  PERFORM ledger.posting_write(p_tenant, p_transaction_ids, p_pending, p_descriptions, p_external_ids, p_metadata,
    p_effective_at, p_expires_at, p_idempotency_endpoints, p_idempotency_keys, p_response_statuses, v_bodies,
    v_e_posting, v_e_line_nos, p_entry_ids, p_account_ids, v_e_assets, p_directions, v_e_minors);
  RETURN (SELECT jsonb_agg(jsonb_build_object('body', b.body) ORDER BY b.i)
          FROM unnest(v_bodies) WITH ORDINALITY AS b(body, i));
END $function$;
