-- The payout report's payment scans (src/db/repositories/payout-report.ts) read every column they
-- need from one index, in the range asked: an index-only scan instead of a heap fetch per payment.
-- Through payments_statement (key columns only) each payment's heap row was fetched: at 81,000
-- payments in a tenant's last 30 days (bench `payout-report`, 1,000,000 payments over a year) the
-- heap scan alone took 344 ms of 1,169, and the plan's cost crossed jit_above_cost. With a covering
-- index the scan took 44 ms (interleaved A/B of the query, 16 runs each on a loaded machine: 30 days
-- 608 → 494 ms median, 7 days by hour 163 → 136 ms, the platform's 30 days over every tenant
-- 2,146 → 689 ms).
--
-- With this index, the generated column and the report's 'aggregate' plan (no JIT, 32 MB for sorts),
-- over HTTP on a quieter machine (load 2-3): 7 days by hour p50 43 ms, p99 79 ms; 30 days by day
-- p50 226 ms, p99 296 ms. What it costs the payout path was not separable from the machine's noise
-- in three alternating payroll runs (see the issue's closing note).
--
-- The bank code is a stored generated column so that the index holds it and not the whole
-- beneficiary document (PostgreSQL plans an index-only scan only when every column a query names is
-- in the index): the first version of this index included `beneficiary` and was 4.5 times the size
-- of payments_statement.
ALTER TABLE payments ADD COLUMN bank_code text GENERATED ALWAYS AS (beneficiary->>'bankCode') STORED;
CREATE INDEX payments_report ON payments (tenant_id, mode, created_at)
  INCLUDE (status, status_reason, payout_amount, method, bank_code, settled_at, updated_at);
