-- Up Migration
-- Posting freezes: an operator stops every balance movement of a tenant (and its sub-tenants),
-- or of one of its asset types, for a while (an incident, a reconciliation, a migration), without
-- suspending the tenant: reads, voids and expiries go on; a posting or a commit that would move a
-- frozen balance is refused with 409 POSTING_FROZEN and Retry-After (retry with the same key).
-- Set and lifted with `ledger-admin posting freeze|unfreeze`.
--
-- The database refuses the writes itself, so every path that moves a balance is covered, the
-- batched posting functions included: a statement that inserts a frozen leg (entries: every
-- posting, pending or not; committed_legs: every immediate posting and every commit of a hold)
-- raises LF001 and writes nothing. A posting the rules refuse anyway (a floor, a frozen account)
-- is refused for that reason, since it would write nothing.

CREATE TABLE posting_freezes (
  tenant_id           uuid NOT NULL REFERENCES tenants (tenant_id),
  -- NULL: every asset type of the tenant, and every posting of its sub-tenants.
  asset_type_id       uuid,
  reason              text CHECK (length(reason) BETWEEN 1 AND 1024),
  retry_after_seconds integer NOT NULL CHECK (retry_after_seconds BETWEEN 1 AND 86400),
  frozen_at           timestamptz NOT NULL DEFAULT now_ms(),
  UNIQUE NULLS NOT DISTINCT (tenant_id, asset_type_id),
  FOREIGN KEY (tenant_id, asset_type_id) REFERENCES asset_types (tenant_id, asset_type_id)
);

ALTER TABLE posting_freezes ENABLE ROW LEVEL SECURITY;
ALTER TABLE posting_freezes FORCE ROW LEVEL SECURITY;
-- A tenant's postings see its own freezes and its parent's (a root's freeze covers its clients);
-- only the operator (system context) sets or lifts them.
CREATE POLICY posting_freezes_scope ON posting_freezes
  USING (ctx_system() OR tenant_id = ctx_tenant()
         OR tenant_id = (SELECT t.parent_id FROM tenants t WHERE t.tenant_id = ctx_tenant()))
  WITH CHECK (ctx_system());

-- Statement-level, over the legs the statement inserted (both tables carry tenant and account).
CREATE FUNCTION refuse_frozen_legs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_freeze record;
BEGIN
  -- The common case, no freeze anywhere in sight, costs one probe of an empty index.
  IF NOT EXISTS (SELECT 1 FROM ledger.posting_freezes) THEN RETURN NULL; END IF;
  SELECT f.asset_type_id, max(f.retry_after_seconds) AS retry_after INTO v_freeze
  FROM (SELECT DISTINCT n.tenant_id, a.asset_type_id
        FROM new_legs n JOIN ledger.accounts a ON a.account_id = n.account_id) l
  JOIN ledger.tenants t ON t.tenant_id = l.tenant_id
  JOIN ledger.posting_freezes f
    ON (f.tenant_id = l.tenant_id AND (f.asset_type_id IS NULL OR f.asset_type_id = l.asset_type_id))
    OR (f.tenant_id = t.parent_id AND f.asset_type_id IS NULL)
  GROUP BY f.asset_type_id
  ORDER BY f.asset_type_id NULLS FIRST
  LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'posting is frozen'
      USING ERRCODE = 'LF001',
            DETAIL = jsonb_build_object('retry_after_seconds', v_freeze.retry_after,
                                        'asset_type_id', v_freeze.asset_type_id)::text;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER entries_frozen AFTER INSERT ON entries
  REFERENCING NEW TABLE AS new_legs FOR EACH STATEMENT EXECUTE FUNCTION refuse_frozen_legs();
CREATE TRIGGER committed_legs_frozen AFTER INSERT ON committed_legs
  REFERENCING NEW TABLE AS new_legs FOR EACH STATEMENT EXECUTE FUNCTION refuse_frozen_legs();

-- Down Migration
DROP TRIGGER committed_legs_frozen ON committed_legs;
DROP TRIGGER entries_frozen ON entries;
DROP FUNCTION refuse_frozen_legs();
DROP TABLE posting_freezes;
