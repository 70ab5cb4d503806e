-- The statement (GET /v1/payments and its CSV export): pages are newest first by
-- (created_at, id) and read by keyset, so every filter needs an index that yields its rows already in
-- that order; a page is then an index descent plus `limit + 1` entries, whatever the tenant's size.
CREATE INDEX payments_statement ON payments (tenant_id, mode, created_at DESC, id DESC);
CREATE INDEX payments_statement_status ON payments (tenant_id, mode, status, created_at DESC, id DESC);
CREATE INDEX payments_statement_beneficiary ON payments (tenant_id, mode, beneficiary_id, created_at DESC, id DESC)
  WHERE beneficiary_id IS NOT NULL;
CREATE INDEX payments_statement_customer ON payments (tenant_id, mode, customer_id, created_at DESC, id DESC)
  WHERE customer_id IS NOT NULL;

-- `from`/`to` filter on settled_at but the order is created_at, and the two are correlated (a payment
-- settles seconds to days after it is created): no single btree serves both. With an index on
-- settled_at alone PostgreSQL still walks the created_at index and filters on settled_at, which for
-- an old day means skipping every newer payment first (EXPLAIN ANALYZE at 1M payments, one day two
-- months back: ~800,000 rows filtered out, 0.17 to 0.28 s). So settled payments are bucketed by their
-- America/Caracas settlement day, each bucket in statement order; the repository reads a range as
-- one bounded descent per day and merges the days (src/db/repositories/statement.ts). settled_at is
-- included so that the exact range check is answered from the index too (index-only scans).
CREATE INDEX payments_statement_settled_day
  ON payments (tenant_id, mode, ((settled_at AT TIME ZONE 'America/Caracas')::date), created_at DESC, id DESC)
  INCLUDE (settled_at)
  WHERE settled_at IS NOT NULL;
CREATE INDEX payments_statement_status_settled_day
  ON payments (tenant_id, mode, status, ((settled_at AT TIME ZONE 'America/Caracas')::date), created_at DESC, id DESC)
  INCLUDE (settled_at)
  WHERE settled_at IS NOT NULL;
