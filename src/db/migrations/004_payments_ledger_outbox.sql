-- Programs: a tenant's configuration in one mode: default sender, webhook endpoint.
CREATE TABLE programs (
  tenant_id      uuid NOT NULL REFERENCES tenants (id),
  mode           text NOT NULL CHECK (mode IN ('test', 'live')),
  default_sender jsonb,
  updated_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, mode)
);

-- The caller's own users; their stored sender is step 2 of sender resolution.
CREATE TABLE customers (
  tenant_id  uuid NOT NULL REFERENCES tenants (id),
  mode       text NOT NULL CHECK (mode IN ('test', 'live')),
  id         uuid NOT NULL,
  sender     jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, mode, id)
);

CREATE TABLE payments (
  tenant_id        uuid NOT NULL REFERENCES tenants (id),
  mode             text NOT NULL CHECK (mode IN ('test', 'live')),
  id               uuid NOT NULL,
  customer_id      uuid,
  beneficiary_id   uuid,
  quote_id         uuid,
  status           text NOT NULL CHECK (status IN ('created', 'pending', 'submitted', 'unknown', 'settled', 'failed', 'returned', 'reversed')),
  status_reason    text,
  message          text,
  source_asset     text NOT NULL,
  source_amount    bigint NOT NULL CHECK (source_amount > 0),
  payout_asset     text NOT NULL,
  payout_amount    bigint NOT NULL CHECK (payout_amount > 0),
  fee_amount       bigint NOT NULL CHECK (fee_amount >= 0),
  method           text CHECK (method IN ('pago_movil', 'transferencia')),
  method_requested text NOT NULL CHECK (method_requested IN ('pago_movil', 'transferencia')),
  method_changed   boolean NOT NULL DEFAULT false,
  compensated      boolean NOT NULL DEFAULT false,
  bank_reference   text,
  beneficiary      jsonb NOT NULL,
  sender           jsonb,
  rail             text,
  rail_acknowledged_at timestamptz,
  next_check_at    timestamptz,
  check_attempts   integer NOT NULL DEFAULT 0,
  settled_at       timestamptz,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  -- A failed payment charged nothing; only a compensated (reversed-entry) one can be failed after the ledger.
  CHECK (status <> 'failed' OR status_reason IS NOT NULL),
  CHECK (status NOT IN ('settled', 'reversed') OR (settled_at IS NOT NULL AND bank_reference IS NOT NULL))
);
-- The reaper's queue: only payments still waiting for the rail.
CREATE INDEX payments_unresolved ON payments (next_check_at) WHERE status IN ('submitted', 'unknown');
CREATE INDEX payments_quote ON payments (tenant_id, quote_id);

-- The history of every payment: one row per transition, written with the transition itself.
CREATE TABLE payment_transitions (
  tenant_id   uuid NOT NULL,
  payment_id  uuid NOT NULL,
  seq         bigserial,
  from_status text,
  to_status   text NOT NULL,
  reason      text,
  actor       text NOT NULL CHECK (actor IN ('api', 'provider_event', 'reaper', 'system')),
  metadata    jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, payment_id, seq),
  FOREIGN KEY (tenant_id, payment_id) REFERENCES payments (tenant_id, id)
);

-- Double-entry ledger. Accounts are identified by (tenant, mode, asset, kind); postings are signed
-- (debit positive, credit negative) and every ledger transaction sums to zero per asset.
CREATE TABLE ledger_accounts (
  tenant_id uuid NOT NULL REFERENCES tenants (id),
  mode      text NOT NULL CHECK (mode IN ('test', 'live')),
  asset     text NOT NULL,
  kind      text NOT NULL CHECK (kind IN ('prefunding', 'credit_receivable', 'in_flight', 'revenue', 'treasury', 'fx')),
  balance   bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, mode, asset, kind),
  -- Prefunding is what we owe the tenant (credit-normal): it may never turn into a debt.
  CHECK (kind <> 'prefunding' OR balance <= 0),
  -- Credit drawn is what the tenant owes us: never negative.
  CHECK (kind <> 'credit_receivable' OR balance >= 0)
);

CREATE TABLE ledger_transactions (
  tenant_id  uuid NOT NULL REFERENCES tenants (id),
  mode       text NOT NULL CHECK (mode IN ('test', 'live')),
  id         uuid NOT NULL,
  kind       text NOT NULL CHECK (kind IN ('funding', 'payout', 'payout_settlement', 'payout_failure', 'payout_reversal', 'daily_close')),
  payment_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
-- One entry of each kind per payment at most: a retried outcome can never post twice.
CREATE UNIQUE INDEX ledger_transactions_once ON ledger_transactions (tenant_id, payment_id, kind) WHERE payment_id IS NOT NULL;

CREATE TABLE ledger_postings (
  tenant_id      uuid NOT NULL,
  transaction_id uuid NOT NULL,
  mode           text NOT NULL,
  asset          text NOT NULL,
  account_kind   text NOT NULL,
  amount         bigint NOT NULL CHECK (amount <> 0),
  PRIMARY KEY (tenant_id, transaction_id, asset, account_kind),
  FOREIGN KEY (tenant_id, transaction_id) REFERENCES ledger_transactions (tenant_id, id)
);

-- Debits equal credits, enforced by the database at commit, whatever the code did.
CREATE FUNCTION ledger_assert_balanced() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  unbalanced text;
BEGIN
  SELECT asset INTO unbalanced
    FROM ledger_postings
   WHERE tenant_id = NEW.tenant_id AND transaction_id = NEW.transaction_id
   GROUP BY asset
  HAVING sum(amount) <> 0
   LIMIT 1;
  IF unbalanced IS NOT NULL THEN
    RAISE EXCEPTION 'ledger transaction % is unbalanced in %', NEW.transaction_id, unbalanced
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER ledger_postings_balanced
  AFTER INSERT ON ledger_postings
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION ledger_assert_balanced();

-- Completed daily closes: one per tenant, mode, asset and Caracas business day.
CREATE TABLE daily_closes (
  tenant_id     uuid NOT NULL REFERENCES tenants (id),
  mode          text NOT NULL,
  asset         text NOT NULL,
  business_date date NOT NULL,
  amount        bigint NOT NULL,
  closed_at     timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, mode, asset, business_date)
);

-- The transactional outbox: the event a state change causes, committed with it.
CREATE TABLE outbox_events (
  id              bigserial,
  tenant_id       uuid NOT NULL REFERENCES tenants (id),
  mode            text NOT NULL CHECK (mode IN ('test', 'live')),
  event_type      text NOT NULL CHECK (event_type IN ('payment.settled', 'payment.failed', 'payment.reversed')),
  aggregate_type  text NOT NULL,
  aggregate_id    uuid NOT NULL,
  payload         jsonb NOT NULL,
  payload_text    text NOT NULL,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'published', 'dead')),
  attempts        integer NOT NULL DEFAULT 0,
  last_error      text,
  next_attempt_at timestamptz,
  published_at    timestamptz,
  dead_at         timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
-- Exactly one outcome event per payout, and at most one reversal.
CREATE UNIQUE INDEX outbox_one_outcome ON outbox_events (tenant_id, aggregate_id)
  WHERE event_type IN ('payment.settled', 'payment.failed');
CREATE UNIQUE INDEX outbox_one_reversal ON outbox_events (tenant_id, aggregate_id)
  WHERE event_type = 'payment.reversed';
CREATE INDEX outbox_due ON outbox_events (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_list ON outbox_events (tenant_id, mode, id DESC);
