-- Anomalies: what the rail said that contradicts our records (settled after we recorded failed, a
-- return of a payment we never saw settle, a reference we have no payment for, an amount or bank
-- reference that differs from ours), and discrepancies a reconciliation run found. Our records are
-- never changed to match: each anomaly is stored once, with both sides' evidence and the raw report,
-- and stays open until an operator resolves it with a note.
--
-- A platform table, not a tenant-partitioned one: it is the operator's work queue, read only by the
-- platform key (platform-wide admin reads), and a row may have no tenant at all — a notification naming
-- a reference we have no payment for tells us nothing trustworthy about whose it was (the rail's echo
-- of a tenant is kept in `raw`, not here). So it is keyed by its own id, with tenant_id, mode and
-- payment_id as plain columns (no foreign keys: an anomaly is evidence as reported, and must never
-- make or wait for a lock on the rows it is about).
--
-- dedup_key makes a contradiction one row however often it is heard: a redelivered notification, a
-- rail answering the same thing to every question, a batch run again after a crash all insert the
-- same key (INSERT … ON CONFLICT DO NOTHING).
CREATE TABLE anomalies (
  id              uuid PRIMARY KEY,
  kind            text NOT NULL CHECK (kind IN (
                    'settled_after_failed', 'failed_after_settled', 'return_of_failed', 'return_of_unresolved',
                    'unknown_reference', 'amount_mismatch', 'bank_reference_mismatch', 'reconciliation_discrepancy')),
  tenant_id       uuid,
  mode            text CHECK (mode IN ('test', 'live')),
  payment_id      uuid,
  dedup_key       text NOT NULL CHECK (char_length(dedup_key) BETWEEN 1 AND 300),
  -- What we had, what the rail (or the check) said, and the report exactly as it came.
  ours            jsonb NOT NULL,
  theirs          jsonb NOT NULL,
  raw             jsonb NOT NULL,
  -- When the rail said it (a notification's own time), else when we heard it.
  reported_at     timestamptz NOT NULL,
  created_at      timestamptz NOT NULL,
  status          text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
  -- The API key that resolved it, and why.
  resolved_by     uuid,
  resolution_note text CHECK (char_length(resolution_note) BETWEEN 1 AND 2000),
  resolved_at     timestamptz,
  CHECK (payment_id IS NULL OR (tenant_id IS NOT NULL AND mode IS NOT NULL)),
  CHECK ((status = 'resolved') = (resolved_at IS NOT NULL)),
  CHECK ((status = 'resolved') = (resolved_by IS NOT NULL)),
  CHECK ((status = 'resolved') = (resolution_note IS NOT NULL))
);

CREATE UNIQUE INDEX anomalies_dedup ON anomalies (dedup_key);
-- GET /v1/admin/anomalies: newest first, by kind or not.
CREATE INDEX anomalies_newest ON anomalies (created_at DESC, id DESC);
CREATE INDEX anomalies_by_kind ON anomalies (kind, created_at DESC, id DESC);
-- The open ones (the "Needs review" screen, the metric of open anomalies): few, read often.
CREATE INDEX anomalies_open ON anomalies (created_at DESC, id DESC) WHERE status = 'open';
