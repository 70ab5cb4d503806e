-- The scheduled close of a Caracas day settles what was drawn by the end of that day: the balances
-- now minus what was posted since. This finds a tenant's entries since an instant without reading
-- its whole history.
CREATE INDEX ledger_transactions_by_time ON ledger_transactions (tenant_id, mode, created_at);
