-- Up Migration
-- A posting in one statement (one round trip, its own implicit transaction) instead of BEGIN,
-- set_config, lock, write, COMMIT (five). post_transaction sets the tenant context and lock
-- budget, checks what needs no lock (unknown accounts, amounts at scale, rule 1: facts that never
-- change), then locks the sync accounts and their balance rows in account_id order (the one lock
-- order of the ledger), so a hot account's rows are held only for what needs them (until the
-- commit's WAL flush, which bounds postings on one account per second). It applies posting rules
-- 2-4 with the codes, messages and details the spec and the tests fix, then writes the
-- transaction, its legs, committed legs (posted), counters, the hold outbox row (pending) and the
-- idempotency record, and returns the response body it recorded. A refusal is returned as
-- {error: {...}} after nothing was written (the row locks end with the statement); {body: {...}}
-- is the 201 body. The deferred balance check (rule 1's backstop) still runs at the statement's
-- commit. It runs on a generic plan (plan_cache_mode; why: 0005).

-- 1234 at scale 2 → '12.34'; -5 → '-0.05'; scale 0 → '1234' (as minorToDecimal in money.ts).
CREATE FUNCTION minor_to_decimal(p_minor numeric, p_scale integer) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN p_minor < 0 THEN '-' ELSE '' END
         || left(d, length(d) - p_scale)
         || CASE WHEN p_scale > 0 THEN '.' || right(d, p_scale) ELSE '' END
  FROM (SELECT CASE WHEN length(t) > p_scale THEN t ELSE lpad(t, p_scale + 1, '0') END AS d
        FROM (SELECT trunc(abs(p_minor))::text AS t) a) b
$$;

-- The API's instant format: ISO-8601 UTC with milliseconds and Z.
CREATE FUNCTION iso_ms(p_at timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT to_char(p_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

CREATE FUNCTION post_transaction(
  p_tenant uuid, p_lock_timeout text, p_transaction_id uuid, p_pending boolean, p_description text,
  p_external_id text, p_metadata jsonb, p_effective_at timestamptz, p_expires_at timestamptz,
  p_entry_ids uuid[], p_account_ids uuid[], p_directions text[], p_amounts text[],
  p_idempotency_endpoint text, p_idempotency_key text, p_response_status smallint)
RETURNS jsonb LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_now timestamptz;
  v_ids uuid[];
  v_error jsonb;
  v_assets uuid[];
  v_minors numeric[];
  v_accounts jsonb;
  v_body jsonb;
  v_state text := CASE WHEN p_pending THEN 'pending' ELSE 'committed' END;
BEGIN
  PERFORM set_config('ledger.tenant_id', p_tenant::text, true);
  PERFORM set_config('lock_timeout', p_lock_timeout, true);
  v_now := ledger.now_ms();
  SELECT array_agg(DISTINCT id ORDER BY id) INTO v_ids FROM unnest(p_account_ids) AS id;

  -- Unknown accounts (or another tenant's: row-level security hides them), in order of appearance.
  SELECT jsonb_build_object('code', 'REFERENCE_NOT_FOUND',
           'message', 'unknown account: ' || string_agg(m.id::text, ', ' ORDER BY m.first),
           'details', jsonb_build_object('account_ids', jsonb_agg(m.id ORDER BY m.first)))
  INTO v_error
  FROM (SELECT e.id, min(e.ord) AS first
        FROM unnest(p_account_ids) WITH ORDINALITY AS e(id, ord)
        WHERE NOT EXISTS (SELECT 1 FROM ledger.accounts a WHERE a.account_id = e.id)
        GROUP BY e.id) m
  HAVING count(*) > 0;
  IF v_error IS NOT NULL THEN RETURN jsonb_build_object('error', v_error); END IF;

  -- Amounts at each account's scale (as decimalToMinor in money.ts), first bad entry wins.
  SELECT x.problem INTO v_error
  FROM (
    SELECT e.ord,
           CASE
             WHEN e.m IS NULL OR e.m[1] IS NOT NULL THEN jsonb_build_object('code', 'INVALID_AMOUNT',
               'message', format('"%s" is not a plain decimal string', e.amount))
             WHEN length(coalesce(e.m[3], '')) > e.scale THEN jsonb_build_object('code', 'INVALID_AMOUNT_SCALE',
               'message', format('"%s" has more than %s decimals', e.amount, e.scale))
             WHEN length(coalesce(nullif(ltrim(e.m[2] || rpad(coalesce(e.m[3], ''), e.scale, '0'), '0'), ''), '0')) > 38
               THEN jsonb_build_object('code', 'INVALID_AMOUNT',
               'message', format('"%s" has more than 38 digits', e.amount))
             WHEN (e.m[2] || rpad(coalesce(e.m[3], ''), e.scale, '0'))::numeric = 0 THEN jsonb_build_object(
               'code', 'INVALID_AMOUNT', 'message', format('entries[%s].amount must be greater than zero', e.ord - 1))
           END AS problem
    FROM (SELECT u.ord, u.amount, t.scale, regexp_match(u.amount, '^(-)?([0-9]+)(?:\.([0-9]+))?$') AS m
          FROM unnest(p_account_ids, p_amounts) WITH ORDINALITY AS u(id, amount, ord)
          JOIN ledger.accounts a ON a.account_id = u.id
          JOIN ledger.asset_types t ON t.asset_type_id = a.asset_type_id) e
  ) x
  WHERE x.problem IS NOT NULL
  ORDER BY x.ord LIMIT 1;
  IF v_error IS NOT NULL THEN RETURN jsonb_build_object('error', v_error); END IF;

  SELECT array_agg(a.asset_type_id ORDER BY u.ord),
         array_agg((m[2] || rpad(coalesce(m[3], ''), t.scale, '0'))::numeric ORDER BY u.ord)
  INTO v_assets, v_minors
  FROM unnest(p_account_ids, p_amounts) WITH ORDINALITY AS u(id, amount, ord)
  JOIN ledger.accounts a ON a.account_id = u.id
  JOIN ledger.asset_types t ON t.asset_type_id = a.asset_type_id
  CROSS JOIN LATERAL regexp_match(u.amount, '^(-)?([0-9]+)(?:\.([0-9]+))?$') AS m;

  -- Rule 1: per asset type, debits equal credits and both sides are present.
  SELECT jsonb_build_object('code', 'UNBALANCED_TRANSACTION',
           'message', 'debits must equal credits per asset type, with both sides present',
           'details', jsonb_agg(jsonb_build_object('asset_type_id', s.asset, 'debits_minor', s.d::text,
                                                   'credits_minor', s.c::text) ORDER BY s.first))
  INTO v_error
  FROM (SELECT l.asset, min(l.ord) AS first,
               coalesce(sum(l.minor) FILTER (WHERE l.direction = 'debit'), 0) AS d,
               coalesce(sum(l.minor) FILTER (WHERE l.direction = 'credit'), 0) AS c
        FROM unnest(v_assets, p_directions, v_minors) WITH ORDINALITY AS l(asset, direction, minor, ord)
        GROUP BY l.asset) s
  WHERE s.d <> s.c OR s.d = 0
  HAVING count(*) > 0;
  IF v_error IS NOT NULL THEN RETURN jsonb_build_object('error', v_error); END IF;

  -- Only now the row locks: everything above reads facts that never change (an account's existence,
  -- asset type and scale), so it runs before the hot rows are held. What follows (status, floors,
  -- writes) needs them; they are released when the statement's transaction commits.
  PERFORM 1 FROM ledger.accounts a JOIN ledger.balances b USING (account_id)
  WHERE a.account_id = ANY (v_ids) AND a.balance_tracking = 'sync'
  ORDER BY a.account_id
  FOR UPDATE OF a, b;

  -- Frozen or closed accounts take no posting, in account_id order.
  SELECT jsonb_build_object('code', 'ACCOUNT_NOT_ACTIVE', 'message', format('account %s is %s', a.account_id, a.status),
           'details', jsonb_build_object('account_id', a.account_id, 'status', a.status))
  INTO v_error
  FROM ledger.accounts a WHERE a.account_id = ANY (v_ids) AND a.status <> 'active'
  ORDER BY a.account_id LIMIT 1;
  IF v_error IS NOT NULL THEN RETURN jsonb_build_object('error', v_error); END IF;

  -- Rules 2-4 on the locked counters: each sync account once, on the net of the transaction, only
  -- when the transaction lowers its available balance (posted less contra holds).
  WITH deltas AS (
    SELECT l.id,
           coalesce(sum(l.minor) FILTER (WHERE NOT p_pending AND l.direction = 'debit'), 0) AS pd,
           coalesce(sum(l.minor) FILTER (WHERE NOT p_pending AND l.direction = 'credit'), 0) AS pc,
           coalesce(sum(l.minor) FILTER (WHERE p_pending AND l.direction = 'debit'), 0) AS hd,
           coalesce(sum(l.minor) FILTER (WHERE p_pending AND l.direction = 'credit'), 0) AS hc
    FROM unnest(p_account_ids, p_directions, v_minors) AS l(id, direction, minor)
    GROUP BY l.id),
  sync AS (
    SELECT a.account_id, a.floor_minor, t.scale,
           CASE WHEN a.normal_side = 'debit' THEN b.posted_debits - b.posted_credits - b.pending_credits
                ELSE b.posted_credits - b.posted_debits - b.pending_debits END AS before,
           CASE WHEN a.normal_side = 'debit'
                THEN (b.posted_debits + d.pd) - (b.posted_credits + d.pc) - (b.pending_credits + d.hc)
                ELSE (b.posted_credits + d.pc) - (b.posted_debits + d.pd) - (b.pending_debits + d.hd) END AS after
    FROM deltas d
    JOIN ledger.accounts a ON a.account_id = d.id AND a.balance_tracking = 'sync'
    JOIN ledger.balances b ON b.account_id = d.id
    JOIN ledger.asset_types t ON t.asset_type_id = a.asset_type_id)
  SELECT (SELECT jsonb_build_object('code', 'INSUFFICIENT_AVAILABLE',
                   'message', format('account %s would fall below its balance floor', s.account_id),
                   'details', jsonb_build_object('account_id', s.account_id, 'available_minor', s.before::text,
                                                 'available_after_minor', s.after::text,
                                                 'balance_floor_minor', s.floor_minor::text))
          FROM sync s WHERE s.floor_minor IS NOT NULL AND s.after < s.before AND s.after < s.floor_minor
          ORDER BY s.account_id LIMIT 1),
         coalesce((SELECT jsonb_agg(jsonb_build_object('account_id', s.account_id,
                            'available_after_minor', s.after::text,
                            'available_after', ledger.minor_to_decimal(s.after, s.scale)) ORDER BY s.account_id)
                   FROM sync s), '[]'::jsonb)
  INTO v_error, v_accounts;
  IF v_error IS NOT NULL THEN RETURN jsonb_build_object('error', v_error); END IF;

  v_body := jsonb_build_object('transaction_id', p_transaction_id, 'state', v_state,
                               'created_at', ledger.iso_ms(v_now), 'accounts', v_accounts);

  WITH txn AS (
    INSERT INTO ledger.transactions (transaction_id, tenant_id, state, pending, description, external_id, metadata,
                                     effective_at, expires_at, created_at, finalized_at)
    VALUES (p_transaction_id, p_tenant, v_state, p_pending, p_description, p_external_id, p_metadata,
            coalesce(p_effective_at, v_now), p_expires_at, v_now, CASE WHEN p_pending THEN NULL ELSE v_now END)
    RETURNING transaction_id, effective_at, finalized_at),
  legs AS (
    INSERT INTO ledger.entries (entry_id, tenant_id, transaction_id, account_id, asset_type_id, line_no, direction,
                                amount_minor, created_at)
    SELECT e.entry_id, p_tenant, txn.transaction_id, e.account_id, e.asset_type_id, e.line_no, e.direction, e.minor, v_now
    FROM unnest(p_entry_ids, p_account_ids, v_assets, p_directions, v_minors) WITH ORDINALITY
      AS e(entry_id, account_id, asset_type_id, direction, minor, line_no)
    CROSS JOIN txn
    RETURNING entry_id, account_id, direction, amount_minor),
  committed AS (
    INSERT INTO ledger.committed_legs (entry_id, tenant_id, account_id, effective_at, finalized_at, debit_minor, credit_minor)
    SELECT l.entry_id, p_tenant, l.account_id, txn.effective_at, txn.finalized_at,
           CASE WHEN l.direction = 'debit' THEN l.amount_minor ELSE 0 END,
           CASE WHEN l.direction = 'credit' THEN l.amount_minor ELSE 0 END
    FROM legs l CROSS JOIN txn WHERE txn.finalized_at IS NOT NULL
    RETURNING 1),
  moved AS (
    UPDATE ledger.balances b
    SET posted_debits = b.posted_debits + d.pd, posted_credits = b.posted_credits + d.pc,
        pending_debits = b.pending_debits + d.hd, pending_credits = b.pending_credits + d.hc,
        version = b.version + 1
    FROM (SELECT l.id,
                 coalesce(sum(l.minor) FILTER (WHERE NOT p_pending AND l.direction = 'debit'), 0) AS pd,
                 coalesce(sum(l.minor) FILTER (WHERE NOT p_pending AND l.direction = 'credit'), 0) AS pc,
                 coalesce(sum(l.minor) FILTER (WHERE p_pending AND l.direction = 'debit'), 0) AS hd,
                 coalesce(sum(l.minor) FILTER (WHERE p_pending AND l.direction = 'credit'), 0) AS hc
          FROM unnest(p_account_ids, p_directions, v_minors) AS l(id, direction, minor)
          JOIN ledger.accounts a ON a.account_id = l.id AND a.balance_tracking = 'sync'
          GROUP BY l.id) d
    WHERE b.account_id = d.id
    RETURNING 1),
  outbox AS (
    INSERT INTO ledger.hold_outbox (transaction_id, tenant_id, expires_at)
    SELECT transaction_id, p_tenant, p_expires_at FROM txn WHERE p_pending
    RETURNING 1),
  idempotency AS (
    UPDATE ledger.idempotency_keys
    SET state = 'completed', response_status = p_response_status, response_body = v_body
    WHERE p_idempotency_key IS NOT NULL AND tenant_id = p_tenant AND endpoint = p_idempotency_endpoint
      AND key = p_idempotency_key
    RETURNING 1)
  SELECT NULL FROM (SELECT (SELECT count(*) FROM legs), (SELECT count(*) FROM committed), (SELECT count(*) FROM moved),
                           (SELECT count(*) FROM outbox), (SELECT count(*) FROM idempotency)) AS done
  INTO v_error;

  RETURN jsonb_build_object('body', v_body);
END $$;

-- Down Migration
DROP FUNCTION post_transaction(uuid, text, uuid, boolean, text, text, jsonb, timestamptz, timestamptz, uuid[], uuid[],
                               text[], text[], text, text, smallint);
DROP FUNCTION iso_ms(timestamptz);
DROP FUNCTION minor_to_decimal(numeric, integer);
