-- Beneficiaries: who receives the bolivares. The service validates every
-- field before storing; the CHECKs repeat the formats so no other writer can store a row a payout
-- could not use.

CREATE TABLE beneficiaries (
  tenant_id           uuid NOT NULL REFERENCES tenants (id),
  mode                text NOT NULL CHECK (mode IN ('test', 'live')),
  id                  uuid NOT NULL,
  full_name           text NOT NULL CHECK (char_length(full_name) BETWEEN 1 AND 100),
  national_id         text NOT NULL CHECK (national_id ~ '^[VEJGP][0-9]{6,9}$'),
  bank_code           text NOT NULL CHECK (bank_code ~ '^[0-9]{4}$'),
  account_number      text CHECK (account_number ~ '^[0-9]{16,20}$' AND left(account_number, 4) = bank_code),
  phone               text CHECK (phone ~ '^04[0-9]{9}$'),
  asset               text NOT NULL CHECK (asset IN ('BS', 'USD', 'USDC', 'VESC')),
  country             text NOT NULL CHECK (country ~ '^[A-Z]{2}$'),
  instrument          text NOT NULL CHECK (instrument IN ('pago_movil', 'transferencia')),
  status              text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'blocked')),
  payout_count        integer NOT NULL DEFAULT 0 CHECK (payout_count >= 0),
  last_success_at     timestamptz,
  last_failure_reason text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  -- Registration is idempotent on these; the service relies on this key.
  CONSTRAINT beneficiaries_identity UNIQUE (tenant_id, mode, national_id, bank_code, instrument),
  -- The instrument is derived, never chosen: an account number means transferencia.
  CONSTRAINT beneficiaries_instrument_derived CHECK ((instrument = 'transferencia') = (account_number IS NOT NULL))
);

-- Listing: newest first, keyset on (created_at, id) within the caller's partition.
CREATE INDEX beneficiaries_listing ON beneficiaries (tenant_id, mode, created_at DESC, id DESC);
