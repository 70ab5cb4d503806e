-- Configured limit rules. A rule binds caps to a scope and an
-- instrument ('*' = any). Platform-wide rows have no tenant; the table is read through a cache.
CREATE TABLE limit_rules (
  id              uuid PRIMARY KEY,
  scope           text NOT NULL CHECK (scope IN ('platform', 'tenant', 'customer', 'beneficiary')),
  tenant_id       uuid REFERENCES tenants (id),
  subject_id      uuid,
  method          text NOT NULL CHECK (method IN ('pago_movil', 'transferencia', '*')),
  per_tx_max      bigint NOT NULL CHECK (per_tx_max > 0),
  daily_max       bigint NOT NULL CHECK (daily_max > 0),
  monthly_max     bigint CHECK (monthly_max > 0),
  daily_count_max bigint CHECK (daily_count_max > 0),
  created_at      timestamptz NOT NULL DEFAULT now(),
  deleted_at      timestamptz,
  CHECK ((scope = 'platform') = (tenant_id IS NULL)),
  CHECK ((scope IN ('customer', 'beneficiary')) = (subject_id IS NOT NULL))
);
-- One live rule per (scope, tenant, subject, method): a second one would make precedence ambiguous.
CREATE UNIQUE INDEX limit_rules_one_per_target ON limit_rules (
  scope, coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'), coalesce(subject_id, '00000000-0000-0000-0000-000000000000'), method
) WHERE deleted_at IS NULL;

-- Consumption counters: one row per (tenant, mode, subject, instrument, Caracas day). A payout
-- increments its rows in its own transaction (the row lock makes check-and-consume atomic); a
-- failed or reversed payout decrements them in the transaction that records that outcome. The
-- month is the sum of at most 31 rows, so no payout scans the day's payments.
CREATE TABLE limit_usage (
  tenant_id     uuid NOT NULL REFERENCES tenants (id),
  mode          text NOT NULL CHECK (mode IN ('test', 'live')),
  subject_kind  text NOT NULL CHECK (subject_kind IN ('tenant', 'customer', 'beneficiary')),
  subject_id    uuid NOT NULL,
  method        text NOT NULL CHECK (method IN ('pago_movil', 'transferencia')),
  business_date date NOT NULL,
  amount        bigint NOT NULL DEFAULT 0 CHECK (amount >= 0),
  count         bigint NOT NULL DEFAULT 0 CHECK (count >= 0),
  PRIMARY KEY (tenant_id, mode, subject_kind, subject_id, method, business_date)
);
