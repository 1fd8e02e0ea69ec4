-- Up Migration
-- Async accounts' balance rows advanced from a queue of deltas instead of re-summing the whole
-- journal every second in every API process.
--
-- Why a queue and not a watermark over the journal: entry ids (UUIDv7), created_at and sequences
-- are assigned before commit, and transactions commit out of order, so "everything below id X"
-- can still gain rows after a reader passed X. A queue row is instead written in the same
-- database transaction as the journal change it describes (by triggers on the journal tables,
-- so every path - posting, commit, void, expiry, direct SQL - writes one), and is consumed by
-- DELETE ... RETURNING in the same transaction that moves the balance row. Each delta is thus
-- applied exactly once: a crash rolls both back, and two consumers cannot both delete a row.
--
-- Invariant, in any single snapshot: for every async account,
--   balances row + sum(its queued deltas) = sums over the journal (committed and pending legs).
--
-- Postings never lock an async account's balance row (rule 4): they only append to the queue
-- (no foreign key, so not even a key-share lock on accounts beyond the one entries already take).

CREATE TABLE async_balance_deltas (
  delta_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  account_id      uuid NOT NULL,
  tenant_id       uuid NOT NULL,
  transaction_id  uuid NOT NULL,
  posted_debits   numeric(38, 0) NOT NULL,
  posted_credits  numeric(38, 0) NOT NULL,
  -- Negative when a hold settles (its pending amounts are released).
  pending_debits  numeric(38, 0) NOT NULL,
  pending_credits numeric(38, 0) NOT NULL,
  -- The writing transaction's start: it commits later, which is what makes min(created_at) of
  -- an account's queued rows a truthful as-of bound (see account_balance below).
  created_at      timestamptz NOT NULL DEFAULT now_ms()
);
CREATE INDEX async_balance_deltas_account ON async_balance_deltas (account_id, delta_id) INCLUDE (created_at);
-- Every row is deleted within about a second of its insert: vacuum by a fixed count of dead
-- rows, not by a fraction of a table that is usually near empty.
ALTER TABLE async_balance_deltas SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000,
                                      autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 10000);

ALTER TABLE async_balance_deltas ENABLE ROW LEVEL SECURITY;
ALTER TABLE async_balance_deltas FORCE ROW LEVEL SECURITY;
CREATE POLICY async_balance_deltas_scope ON async_balance_deltas
  USING (tenant_id = ctx_tenant() OR ctx_system()) WITH CHECK (tenant_id = ctx_tenant() OR ctx_system());

-- New legs on async accounts: posted (committed transaction) or pending (hold), per account.
CREATE FUNCTION async_deltas_on_entries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ledger.async_balance_deltas
    (account_id, tenant_id, transaction_id, posted_debits, posted_credits, pending_debits, pending_credits)
  SELECT n.account_id, n.tenant_id, n.transaction_id,
         coalesce(sum(n.amount_minor) FILTER (WHERE t.state = 'committed' AND n.direction = 'debit'), 0),
         coalesce(sum(n.amount_minor) FILTER (WHERE t.state = 'committed' AND n.direction = 'credit'), 0),
         coalesce(sum(n.amount_minor) FILTER (WHERE t.state = 'pending' AND n.direction = 'debit'), 0),
         coalesce(sum(n.amount_minor) FILTER (WHERE t.state = 'pending' AND n.direction = 'credit'), 0)
  FROM new_entries n
  JOIN ledger.accounts a ON a.account_id = n.account_id AND a.balance_tracking = 'async'
  JOIN ledger.transactions t ON t.transaction_id = n.transaction_id
  WHERE t.state IN ('committed', 'pending')
  GROUP BY n.account_id, n.tenant_id, n.transaction_id
  ORDER BY n.account_id;
  RETURN NULL;
END $$;

-- A hold leaving pending: its pending amounts released, and posted added when it committed.
CREATE FUNCTION async_deltas_on_settlement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO ledger.async_balance_deltas
    (account_id, tenant_id, transaction_id, posted_debits, posted_credits, pending_debits, pending_credits)
  SELECT e.account_id, e.tenant_id, e.transaction_id,
         CASE WHEN NEW.state = 'committed' THEN coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'debit'), 0) ELSE 0 END,
         CASE WHEN NEW.state = 'committed' THEN coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'credit'), 0) ELSE 0 END,
         -coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'debit'), 0),
         -coalesce(sum(e.amount_minor) FILTER (WHERE e.direction = 'credit'), 0)
  FROM ledger.entries e
  JOIN ledger.accounts a ON a.account_id = e.account_id AND a.balance_tracking = 'async'
  WHERE e.transaction_id = NEW.transaction_id
  GROUP BY e.account_id, e.tenant_id, e.transaction_id
  ORDER BY e.account_id;
  RETURN NULL;
END $$;

-- Created before the rebuild below: CREATE TRIGGER waits for in-flight writers of these tables
-- and holds off new ones until this migration commits, so no change is missed or counted twice.
CREATE TRIGGER entries_async_deltas AFTER INSERT ON entries
  REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION async_deltas_on_entries();
CREATE TRIGGER transactions_async_deltas AFTER UPDATE OF state ON transactions
  FOR EACH ROW WHEN (OLD.state = 'pending' AND NEW.state <> 'pending')
  EXECUTE FUNCTION async_deltas_on_settlement();

-- One batch of the rollup: at most p_rows queued deltas, oldest first, applied to their accounts.
-- Work is claimed per account (its balance row, FOR UPDATE SKIP LOCKED), never per delta, so a
-- consumer that drains an account knows it saw all of that account's queue and can advance
-- rolled_up_at truthfully; concurrent consumers skip each other's accounts instead of waiting.
-- The second statement runs on a snapshot taken after the locks, so any consumer that held one
-- of these accounts before has committed (its deletes and balance moves are both visible).
-- rolled_up_at = this transaction's start when the account's queue was drained: every change
-- acknowledged before that instant had committed before this snapshot and is now in the row.
CREATE FUNCTION rollup_async_balances(p_rows integer)
RETURNS TABLE (accounts integer, deltas integer, full_batch boolean)
LANGUAGE plpgsql VOLATILE AS $$
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
END $$;
-- Both heads must be read in delta_id order from the primary key (a few pages), never by a
-- sequential scan and sort of the whole queue: a queue's statistics are always stale (it was
-- empty when last analyzed, or a backlog was drained since), and the planner picked the scan
-- and sort on a 200,000-row backlog (80 ms per batch instead of a few).
ALTER FUNCTION rollup_async_balances(integer) SET enable_seqscan = off;
ALTER FUNCTION rollup_async_balances(integer) SET enable_bitmapscan = off;

-- Repair: async balance rows recomputed from the journal, and their queued deltas dropped (the
-- journal already holds what they describe). The accounts' balance rows are locked first
-- (waiting for any consumer), then one statement on a fresh snapshot recomputes and deletes
-- exactly the deltas visible in it; deltas committed after it stay queued and the journal sums
-- do not include them either. p_tenant null: every tenant.
CREATE FUNCTION rebuild_async_balances(p_tenant uuid)
RETURNS TABLE (accounts integer, drifted integer, dropped_deltas integer)
LANGUAGE plpgsql VOLATILE AS $$
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
END $$;

-- A balance row with an as-of that says what it includes, read in one snapshot with the queue:
-- no queued delta for the account means the row holds every change committed before this
-- statement (as_of = now); otherwise it holds every change acknowledged before the later of
-- its last drain and its oldest queued delta's start. Sync accounts never have queued deltas.
CREATE FUNCTION account_balance(p_account uuid)
RETURNS TABLE (account_id uuid, posted_debits numeric, posted_credits numeric, pending_debits numeric,
               pending_credits numeric, version bigint, rolled_up_at timestamptz, as_of timestamptz,
               queued_deltas bigint)
LANGUAGE sql STABLE AS $$
  SELECT b.account_id, b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits, b.version,
         b.rolled_up_at,
         CASE WHEN q.n = 0 THEN ledger.now_ms() ELSE greatest(b.rolled_up_at, q.oldest) END,
         q.n
  FROM ledger.balances b
  CROSS JOIN LATERAL (SELECT count(*) AS n, min(d.created_at) AS oldest
                      FROM ledger.async_balance_deltas d WHERE d.account_id = b.account_id) q
  WHERE b.account_id = p_account
$$;

SELECT * FROM rebuild_async_balances(NULL);

-- Down Migration
DROP FUNCTION account_balance(uuid);
DROP FUNCTION rebuild_async_balances(uuid);
DROP FUNCTION rollup_async_balances(integer);
DROP TRIGGER transactions_async_deltas ON transactions;
DROP TRIGGER entries_async_deltas ON entries;
DROP FUNCTION async_deltas_on_settlement();
DROP FUNCTION async_deltas_on_entries();
DROP TABLE async_balance_deltas;
