-- The payout report's rollups: counts, amounts and time histograms per tenant, mode, hour and
-- Caracas day, kept by the report fold (src/db/repositories/report-rollups.ts) off the payout path,
-- so a report reads a few thousand rollup rows instead of every payment of its range.
--
-- What the fold has taken in is a snapshot (pg_snapshot): a history row is folded when the
-- transaction that wrote it is visible in that snapshot. Transaction ids, not sequence numbers,
-- because a row with a lower `seq` can commit after one with a higher `seq`; a snapshot says exactly
-- which writers had committed. Rows written before this migration have no txid: they are folded by
-- the fold's first run, which builds the rollups from the payments themselves.
ALTER TABLE payment_transitions ADD COLUMN txid xid8;
ALTER TABLE payment_transitions ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
CREATE INDEX payment_transitions_by_txid ON payment_transitions (txid) WHERE txid IS NOT NULL;

ALTER TABLE webhook_deliveries ADD COLUMN txid xid8;
ALTER TABLE webhook_deliveries ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
CREATE INDEX webhook_deliveries_by_txid ON webhook_deliveries (txid) WHERE txid IS NOT NULL;

-- One row: the snapshot folded so far (null until the first build), and when.
CREATE TABLE report_fold (
  id        boolean PRIMARY KEY DEFAULT true CHECK (id),
  folded    pg_snapshot,
  folded_at timestamptz
);
INSERT INTO report_fold DEFAULT VALUES;

-- Payments by the bucket of their creation and their status now. Hour rows carry the status
-- dimension only (the report's per-bucket figures); day rows carry it and the range-wide ones
-- (bank, instrument, failure reason), since a report's range is always whole days.
CREATE TABLE report_payment_counts (
  tenant_id    uuid NOT NULL,
  mode         text NOT NULL CHECK (mode IN ('test', 'live')),
  period       text NOT NULL CHECK (period IN ('hour', 'day')),
  bucket_start timestamptz NOT NULL,
  dimension    text NOT NULL CHECK (dimension IN ('status', 'bank', 'method', 'reason')),
  key          text,
  status       text NOT NULL,
  -- No CHECK (payments >= 0): an upsert checks the row it proposes, here a signed change (-1 as a
  -- payment leaves a status). reportRollupDrift checks the rollups against the payments instead.
  payments     bigint NOT NULL,
  amount       bigint NOT NULL,
  CONSTRAINT report_payment_counts_key UNIQUE NULLS NOT DISTINCT (tenant_id, mode, period, bucket_start, dimension, key, status)
);

-- Time from creation to the outcome, as a histogram per bucket: one row per bucket, its bins as a
-- document {"<bin start ms>": payments, …} (bins: src/domain/report-time-bins.ts). A row per bin
-- would make a month by hour some 36,000 rows to read at a million payments a year; a document per
-- bucket makes it 720.
CREATE TABLE report_outcome_times (
  tenant_id    uuid NOT NULL,
  mode         text NOT NULL CHECK (mode IN ('test', 'live')),
  period       text NOT NULL CHECK (period IN ('hour', 'day')),
  bucket_start timestamptz NOT NULL,
  bins         jsonb NOT NULL,
  PRIMARY KEY (tenant_id, mode, period, bucket_start)
);

-- Webhook delivery attempts by the bucket they were made in: counts by outcome, and the histogram of
-- their durations (all outcomes together), as report_outcome_times keeps it.
CREATE TABLE report_webhook_attempts (
  tenant_id    uuid NOT NULL,
  mode         text NOT NULL CHECK (mode IN ('test', 'live')),
  period       text NOT NULL CHECK (period IN ('hour', 'day')),
  bucket_start timestamptz NOT NULL,
  delivered    bigint NOT NULL,
  rejected     bigint NOT NULL,
  unreachable  bigint NOT NULL,
  bins         jsonb NOT NULL,
  PRIMARY KEY (tenant_id, mode, period, bucket_start)
);
