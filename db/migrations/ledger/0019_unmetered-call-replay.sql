-- Up Migration
-- Calls served while the quota service did not answer are replayed into it (api/ledger/
-- metering-replay.ts): a batch is first marked with the idempotency key it is consumed under,
-- so a replay that dies after the consume and before the delete sends the same key and count
-- again, and the quota service answers it without counting twice.
ALTER TABLE unmetered_calls ADD COLUMN replay_key text;
CREATE INDEX unmetered_calls_replay ON unmetered_calls (replay_key, tenant_id, id);

-- Down Migration
DROP INDEX unmetered_calls_replay;
ALTER TABLE unmetered_calls DROP COLUMN replay_key;
