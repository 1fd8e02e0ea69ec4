-- Up Migration
-- Reservations: an amount held against a subject's quotas until it is committed with actuals,
-- released, or expires (the reservation-expiry job; commit and release see the expiry first).
CREATE TABLE reservations (
  id              text PRIMARY KEY,
  tenant_id       text NOT NULL,
  subject         text NOT NULL,
  status          text NOT NULL DEFAULT 'held'
                  CHECK (status IN ('held', 'committed', 'released', 'expired')),
  -- [{resource, amount}]: what is held, per resource.
  items           jsonb NOT NULL,
  -- [{policy_id, window_key}]: the counter rows the hold was added to (commit and release adjust
  -- those, even after the window has rolled over).
  holds           jsonb NOT NULL,
  expires_at      timestamptz NOT NULL,
  event_id        text NOT NULL,
  settle_event_id text,
  -- [{resource, held, actual, delta, overage}] once committed.
  adjustments     jsonb,
  metadata        jsonb,
  created_at      timestamptz NOT NULL DEFAULT now(),
  settled_at      timestamptz
);
CREATE INDEX reservations_due ON reservations (expires_at) WHERE status = 'held';
CREATE INDEX reservations_tenant ON reservations (tenant_id, created_at);

-- Down Migration
DROP TABLE reservations;
