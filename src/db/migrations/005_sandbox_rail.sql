-- The sandbox rail's OWN state. This table plays the part of the provider's system,
-- not our ledger: nothing in the payment service reads it except through the RailAdapter interface
-- (src/rails/sandbox-rail.ts). It is durable on purpose: a real rail keeps a transfer it has received
-- whatever happens to us, so a restart of this process must not lose one either — the reaper resolves
-- `unknown` payments by asking the rail by reference, and a crash between our ledger commit and the
-- rail call must show up as `not_found`, never as a transfer that silently vanished.
--
-- Nothing here is timer state. Each row stores its whole schedule, fixed when the transfer is received
-- (settle_at, reverse_at, the final outcome); the status at any moment is computed from those columns
-- against the caller's clock, so a later change of SANDBOX_*_DELAY_MS does not move existing transfers.
--
-- Keyed by our reference (the payment id) alone, because that is all a provider knows a transfer by
-- and all `lookup` receives. tenant_id is the provider's copy of who sent it, with no foreign key to
-- our tenants table (a different system); not one of our tenant-partitioned tables.

CREATE TABLE sandbox_rail_transfers (
  reference                uuid PRIMARY KEY,
  mode                     text NOT NULL CHECK (mode IN ('test', 'live')),
  tenant_id                uuid NOT NULL,
  instrument               text NOT NULL CHECK (instrument IN ('pago_movil', 'transferencia')),
  amount_minor             bigint NOT NULL CHECK (amount_minor > 0),
  national_id              text NOT NULL,
  bank_code                text NOT NULL,
  -- Which sandbox trigger the beneficiary's national id selected (for people reading rows).
  scenario                 text NOT NULL CHECK (scenario IN (
                             'settle_at_once', 'unconfirmed_then_settled', 'unconfirmed_then_rejected',
                             'beneficiary_mismatch', 'bank_unreachable', 'invalid_destination_account',
                             'settled_then_reversed', 'instrument_unavailable', 'hang', 'default')),
  -- What the rail says before settle_at.
  pending_status           text NOT NULL CHECK (pending_status IN ('processing', 'unconfirmed')),
  received_at              timestamptz NOT NULL,
  -- When the transfer reaches its final outcome: settled (settled_at = settle_at) or failed.
  settle_at                timestamptz NOT NULL,
  failure_reason           text,
  -- 12 digits, generated once when received, for every transfer that settles.
  bank_reference           text CHECK (bank_reference ~ '^[0-9]{12}$'),
  settled_at               timestamptz,
  -- A settled transfer the bank later returns (V99990007): it reads `reversed` from reverse_at on, and
  -- a `reversed` notification is pending until the consumer acknowledges it.
  reverse_at               timestamptz,
  reversal_reason          text,
  reversal_acknowledged_at timestamptz,
  CHECK (settle_at >= received_at),
  -- Exactly one final outcome: failed with a reason, or settled with a bank reference.
  CHECK ((failure_reason IS NULL) = (bank_reference IS NOT NULL)),
  CHECK ((bank_reference IS NULL) = (settled_at IS NULL)),
  CHECK (settled_at IS NULL OR settled_at = settle_at),
  CHECK ((reverse_at IS NULL) = (reversal_reason IS NULL)),
  CHECK (reverse_at IS NULL OR (settled_at IS NOT NULL AND reverse_at >= settled_at)),
  CHECK (reversal_acknowledged_at IS NULL OR reverse_at IS NOT NULL)
);

-- pendingNotifications: unacknowledged reversals, oldest first.
CREATE INDEX sandbox_rail_transfers_pending_reversals ON sandbox_rail_transfers (reverse_at, reference)
  WHERE reverse_at IS NOT NULL AND reversal_acknowledged_at IS NULL;
