-- A tenant's in-flight account is kept in two rows, whose sum is its balance: slot 0, which payout
-- batches credit as they commit payouts, and slot 1, which outcome batches debit as the rail settles
-- or rejects them. Payouts and their settlements then never wait for each other on one hot row, so a
-- tenant's payout batches and outcome batches commit side by side (db/lock-order.ts). Every other
-- account keeps one row (slot 0). Postings are unchanged: they name the account, never the slot.
ALTER TABLE ledger_accounts ADD COLUMN slot smallint NOT NULL DEFAULT 0;
ALTER TABLE ledger_accounts ADD CONSTRAINT ledger_accounts_slot CHECK (slot = 0 OR (slot = 1 AND kind = 'in_flight'));
ALTER TABLE ledger_accounts DROP CONSTRAINT ledger_accounts_pkey;
ALTER TABLE ledger_accounts ADD PRIMARY KEY (tenant_id, mode, asset, kind, slot);
