-- Tenants and their API keys. Keys are stored as a SHA-256 hash only; the key string is shown once.
-- Tenant-owned tables that follow all carry (tenant_id, mode) and include tenant_id in their keys,
-- so they can later be distributed by tenant.

CREATE TABLE tenants (
  id             uuid PRIMARY KEY,
  name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  is_platform    boolean NOT NULL DEFAULT false,
  credit_enabled boolean NOT NULL DEFAULT false,
  credit_limit   bigint CHECK (credit_limit >= 0),
  fee_bps        integer NOT NULL DEFAULT 100 CHECK (fee_bps BETWEEN 0 AND 10000),
  fee_fixed      bigint NOT NULL DEFAULT 0 CHECK (fee_fixed >= 0),
  spread_bps     integer NOT NULL DEFAULT 50 CHECK (spread_bps BETWEEN 0 AND 9999),
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id          uuid PRIMARY KEY,
  tenant_id   uuid NOT NULL REFERENCES tenants (id),
  mode        text NOT NULL CHECK (mode IN ('test', 'live')),
  scopes      text[] NOT NULL,
  key_hash    text NOT NULL UNIQUE,
  prefix      text NOT NULL,
  last4       text NOT NULL,
  is_platform boolean NOT NULL DEFAULT false,
  source      text NOT NULL DEFAULT 'admin' CHECK (source IN ('admin', 'bootstrap', 'env')),
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at);

-- Facts about this installation (first-start bootstrap done, …).
CREATE TABLE app_state (
  key        text PRIMARY KEY,
  value      jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
