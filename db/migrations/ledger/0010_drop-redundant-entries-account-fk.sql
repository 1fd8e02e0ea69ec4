-- Up Migration
-- entries (tenant_id, account_id) already references accounts (tenant_id, account_id), and both
-- columns are NOT NULL, so the single-column key on account_id checked nothing the pair does not:
-- it was a second foreign-key probe (an index lookup and a KEY SHARE row lock on the account) for
-- every leg written, on the hottest row of a hot-account workload.
ALTER TABLE entries DROP CONSTRAINT entries_account_id_fkey;

-- Down Migration
ALTER TABLE entries ADD CONSTRAINT entries_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (account_id);
