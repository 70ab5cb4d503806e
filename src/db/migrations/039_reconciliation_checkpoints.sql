-- The incremental proof: a scheduled reconciliation run proves what was written since the last one,
-- not the tenant's whole history. What "since" means is a transaction id, not a clock: every ledger
-- entry and every payment row carries the id of the transaction that last wrote it, and a run's
-- snapshot says below which id every transaction has ended (pg_snapshot_xmin). Everything written
-- by a transaction below that id is in the snapshot, so a checkpoint "proven below X" never misses a
-- row committed late by a transaction that began early, whatever the clocks say.
--
-- Rows written before this migration carry no id (NULL): they belong to the first, full, run.
--
-- The indexes lead with the transaction id, not the tenant: an index that leads with tenant_id is one
-- the planner may take for any lookup by tenant (it did: a foreign-key check planned while the table
-- was empty walked every entry of the tenant through it, and the payroll lost a quarter of its rate).
-- Led by written_xact, only a read of what was written since some transaction can use it; such a read
-- walks what every tenant wrote since then, which is what one interval's runs read anyway.
ALTER TABLE ledger_transactions ADD COLUMN written_xact xid8;
ALTER TABLE ledger_transactions ALTER COLUMN written_xact SET DEFAULT pg_current_xact_id();
CREATE INDEX ledger_transactions_written ON ledger_transactions (written_xact, tenant_id, id);

ALTER TABLE payments ADD COLUMN written_xact xid8;
ALTER TABLE payments ALTER COLUMN written_xact SET DEFAULT pg_current_xact_id();
CREATE INDEX payments_written ON payments (written_xact, tenant_id, id);

-- Every change to a payment, by whichever statement, moves it into the next incremental proof.
CREATE FUNCTION payments_mark_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.written_xact := pg_current_xact_id();
  RETURN NEW;
END
$$;
CREATE TRIGGER payments_written BEFORE UPDATE ON payments FOR EACH ROW EXECUTE FUNCTION payments_mark_written();

-- A run proves the whole history (`full`) or what was written since its tenant and mode's checkpoint
-- (`incremental`, `since_run_id` the run that left it).
ALTER TABLE reconciliation_runs ADD COLUMN scope text NOT NULL DEFAULT 'full' CHECK (scope IN ('full', 'incremental'));
ALTER TABLE reconciliation_runs ADD COLUMN since_run_id uuid;

-- The checkpoint, kept with each tenant and mode's standing by every completed run: every transaction
-- below `proven_below` has been proven, and `proven_postings` carries the sums of their postings by
-- entry kind, asset and account ([{"kind", "asset", "account", "amount"}], amounts as decimal strings).
ALTER TABLE reconciliation_partitions ADD COLUMN proven_below xid8;
ALTER TABLE reconciliation_partitions ADD COLUMN proven_postings jsonb;
ALTER TABLE reconciliation_partitions ADD COLUMN last_full_at timestamptz;
