-- One writer per money route: what the payout and outcome batches need to record everything they
-- decide in their own transaction.

-- A payout's Idempotency-Key names the payment it committed, in the transaction that created it. A
-- retry after a crash finds the payment through the key and answers with it.
ALTER TABLE idempotency_keys ADD COLUMN payment_id uuid;

-- The Caracas business day whose limit counters a payout consumed: a failure or reversal gives the
-- usage back to that same day's rows, whatever day it happens on.
ALTER TABLE payments ADD COLUMN usage_day date;
-- The tenant account the payout was charged to (the refund of a failure or reversal goes back to it).
ALTER TABLE payments ADD COLUMN funding_account text CHECK (funding_account IN ('prefunding', 'credit_receivable'));
-- The reaper stopped asking the rail after its last allowed attempt (REAPER_CHECK_ATTEMPTS_MAX); the
-- payment stays unresolved (never invented) until the rail says otherwise or an operator re-queues it.
ALTER TABLE payments ADD COLUMN resolution_parked_at timestamptz;
CREATE INDEX payments_parked ON payments (tenant_id) WHERE resolution_parked_at IS NOT NULL;

UPDATE payments p
   SET funding_account = f.account_kind,
       usage_day = (p.created_at AT TIME ZONE 'America/Caracas')::date
  FROM (SELECT t.tenant_id, t.payment_id, lp.account_kind
          FROM ledger_transactions t
          JOIN ledger_postings lp ON lp.tenant_id = t.tenant_id AND lp.transaction_id = t.id
         WHERE t.kind = 'payout' AND lp.amount > 0 AND lp.account_kind IN ('prefunding', 'credit_receivable')) f
 WHERE f.tenant_id = p.tenant_id AND f.payment_id = p.id;

-- Credit ceilings of the assets other than BS ({"USD": "100000", "USDC": null}); BS keeps credit_limit.
ALTER TABLE tenants ADD COLUMN credit_limits jsonb NOT NULL DEFAULT '{}'::jsonb;

-- How many times we asked the sandbox rail to send each transfer: the provider's view of the promise
-- that a payment is sent at most once.
ALTER TABLE sandbox_rail_transfers ADD COLUMN submissions integer NOT NULL DEFAULT 1 CHECK (submissions >= 1);

-- Which version of the limit rules is current: every rule write bumps it in its own transaction
-- (first, so concurrent rule writes take turns), and a payout batch reads it with its locks, so a
-- batch never decides with rules older than the ones committed when it locked.
CREATE TABLE limit_rule_epoch (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  epoch     bigint NOT NULL
);
INSERT INTO limit_rule_epoch (singleton, epoch) VALUES (true, 0);
