-- The sandbox rail's own outbox of notifications a test asked it to send (POST
-- /v1/sandbox/rail-notifications): what a real rail's webhook might say about a transfer — its
-- outcome, a return — including things that contradict our records, so that integrators and tests can
-- see how the service records them. Like sandbox_rail_transfers (migration 005) this is the provider's
-- state, not ours: the payment service reads it only through the rail adapter's pendingNotifications
-- and acknowledgeNotification. tenant_id is the rail's copy of who asked (no foreign key).
CREATE TABLE sandbox_rail_notifications (
  id              uuid PRIMARY KEY,
  -- The transfer it is about: a payment id of the tenant's, or a reference nobody has.
  reference       uuid NOT NULL,
  mode            text NOT NULL CHECK (mode IN ('test', 'live')),
  tenant_id       uuid NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('settled', 'failed', 'reversed')),
  amount_minor    bigint CHECK (amount_minor > 0),
  bank_reference  text CHECK (bank_reference ~ '^[0-9]{12}$'),
  reason          text CHECK (char_length(reason) BETWEEN 1 AND 64),
  occurred_at     timestamptz NOT NULL,
  acknowledged_at timestamptz,
  CHECK ((kind = 'settled') = (reason IS NULL)),
  CHECK (kind <> 'failed' OR bank_reference IS NULL),
  CHECK (kind <> 'settled' OR bank_reference IS NOT NULL)
);

-- pendingNotifications: unacknowledged ones, oldest first.
CREATE INDEX sandbox_rail_notifications_pending ON sandbox_rail_notifications (occurred_at, id) WHERE acknowledged_at IS NULL;
-- The bound on what one tenant may have waiting.
CREATE INDEX sandbox_rail_notifications_pending_by_tenant ON sandbox_rail_notifications (tenant_id) WHERE acknowledged_at IS NULL;
