-- The payout report (GET /v1/reports/payouts): what it reads by time, each from one index range.
--
-- Payments are read through payments_statement (tenant, mode, created_at): the range asked and no
-- more.
--
-- Webhook delivery attempts carry their event's mode, so one program's attempts over a range are one
-- range of webhook_deliveries_by_time, with what the report counts in the index.
ALTER TABLE webhook_deliveries ADD COLUMN mode text;
UPDATE webhook_deliveries d SET mode = o.mode FROM outbox_events o WHERE o.tenant_id = d.tenant_id AND o.id = d.event_id;
ALTER TABLE webhook_deliveries ALTER COLUMN mode SET NOT NULL;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_mode CHECK (mode IN ('test', 'live'));
CREATE INDEX webhook_deliveries_by_time ON webhook_deliveries (tenant_id, mode, created_at) INCLUDE (ok, status_code, duration_ms);

-- The balance of each prefunding and credit account after each change, in the statement that made
-- it (src/db/balance-history.ts): the balance at the end of a bucket is the last row at or before
-- that time. `at` never goes back per account (ledger_accounts.balance_changed_at); `id` orders rows
-- of one instant, which are written under the account's row lock.
ALTER TABLE ledger_accounts ADD COLUMN balance_changed_at timestamptz;
CREATE TABLE ledger_balance_history (
  tenant_id uuid NOT NULL,
  mode      text NOT NULL CHECK (mode IN ('test', 'live')),
  asset     text NOT NULL,
  kind      text NOT NULL CHECK (kind IN ('prefunding', 'credit_receivable')),
  at        timestamptz NOT NULL,
  id        bigserial,
  balance   bigint NOT NULL,
  PRIMARY KEY (tenant_id, mode, asset, kind, at, id)
);
-- What the books hold now is where the history starts: before it, the report says "not recorded";
-- after it, an account with no row before an instant had not changed yet, so it was zero.
INSERT INTO app_state (key, value) VALUES ('balance_history_started_at', to_jsonb(now()));
UPDATE ledger_accounts SET balance_changed_at = now() WHERE kind IN ('prefunding', 'credit_receivable');
INSERT INTO ledger_balance_history (tenant_id, mode, asset, kind, at, balance)
SELECT tenant_id, mode, asset, kind, balance_changed_at, balance FROM ledger_accounts WHERE kind IN ('prefunding', 'credit_receivable');
