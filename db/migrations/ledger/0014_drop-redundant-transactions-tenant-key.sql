-- Up Migration
-- transactions UNIQUE (tenant_id, transaction_id) is implied by the primary key on transaction_id
-- and no foreign key references it (entries reference transactions (transaction_id)); nothing
-- reads its index (no scan of it over a day of tests and benches), yet every posting inserted into
-- it: one of the four index entries written per transaction, 320 MB on a 5-million-transaction
-- journal. Entries and their transaction share a tenant because both are written under the same
-- tenant context, which row-level security checks on every insert.
ALTER TABLE transactions DROP CONSTRAINT transactions_tenant_id_transaction_id_key;

-- Down Migration
ALTER TABLE transactions ADD CONSTRAINT transactions_tenant_id_transaction_id_key UNIQUE (tenant_id, transaction_id);
