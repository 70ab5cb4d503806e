-- FX rates: the default rate source, set by the admin API. Market rate = BS per 1 unit of the asset.
-- Platform-wide (not tenant-owned): a reference table when distributed.
CREATE TABLE fx_rates (
  asset      text PRIMARY KEY CHECK (asset IN ('USD', 'USDC', 'VESC')),
  market     numeric(20, 8) NOT NULL CHECK (market > 0),
  market_text text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO fx_rates (asset, market, market_text) VALUES
  ('USD', 925.00, '925.00'),
  ('USDC', 925.00, '925.00'),
  ('VESC', 1.00, '1.00');

-- A quote fixes what the beneficiary receives and what the caller pays. Single use: consumption is
-- one conditional UPDATE (consumed_at IS NULL) inside the payout transaction.
CREATE TABLE quotes (
  tenant_id      uuid NOT NULL REFERENCES tenants (id),
  mode           text NOT NULL CHECK (mode IN ('test', 'live')),
  id             uuid NOT NULL,
  customer_id    uuid,
  fixed          text NOT NULL CHECK (fixed IN ('deliver', 'spend')),
  spend_asset    text NOT NULL CHECK (spend_asset IN ('BS', 'USD', 'USDC', 'VESC')),
  spend_amount   bigint NOT NULL CHECK (spend_amount > 0),
  deliver_asset  text NOT NULL CHECK (deliver_asset = 'BS'),
  deliver_amount bigint NOT NULL CHECK (deliver_amount > 0),
  fee_amount     bigint NOT NULL CHECK (fee_amount >= 0),
  rate_value     text,
  rate_market    text,
  spread_bps     integer,
  expires_at     timestamptz NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  consumed_at    timestamptz,
  payment_id     uuid,
  PRIMARY KEY (tenant_id, id),
  -- Deliver mode adds the fee on top; spend mode deducts it from the converted amount.
  CHECK (fixed <> 'deliver' OR spend_amount = deliver_amount + fee_amount),
  CHECK ((rate_value IS NULL) = (spend_asset = 'BS')),
  CHECK ((consumed_at IS NULL) = (payment_id IS NULL))
);
