-- Reconciliation: the service proving its own books, per tenant and mode, run after run. A run reads
-- (REPEATABLE READ, read-only) and writes only these tables: it never corrects what it finds.

-- One row per run. `queued` (asked for, waiting for a worker), `running` (a worker holds its lease),
-- then `completed` (every check ran; `discrepancy_count` says whether it was clean), `failed` (a check
-- could not run: `error`) or `abandoned` (its worker stopped and the lease ran out).
CREATE TABLE reconciliation_runs (
  tenant_id         uuid NOT NULL REFERENCES tenants (id),
  mode              text NOT NULL CHECK (mode IN ('test', 'live')),
  id                uuid NOT NULL,
  trigger           text NOT NULL CHECK (trigger IN ('schedule', 'operator')),
  status            text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'abandoned')),
  requested_at      timestamptz NOT NULL,
  started_at        timestamptz,
  lease_until       timestamptz,
  finished_at       timestamptz,
  -- Every check's verdict: {"<check>": {"verdict": "pass"|"fail"|"not_run", "discrepancies": n, "stored": n}}.
  checks            jsonb NOT NULL DEFAULT '{}'::jsonb,
  discrepancy_count bigint NOT NULL DEFAULT 0 CHECK (discrepancy_count >= 0),
  -- What the run read: {"payments": n, "ledgerTransactions": n, "accounts": n, "limitCounters": n}.
  examined          jsonb NOT NULL DEFAULT '{}'::jsonb,
  error             text,
  PRIMARY KEY (tenant_id, id),
  CHECK ((status = 'running') = (lease_until IS NOT NULL)),
  CHECK ((status IN ('completed', 'failed', 'abandoned')) = (finished_at IS NOT NULL))
);
-- One run at a time per tenant and mode, waiting or under way, whatever the number of workers.
CREATE UNIQUE INDEX reconciliation_runs_one_open ON reconciliation_runs (tenant_id, mode) WHERE status IN ('queued', 'running');
-- The queue, oldest request first; and the leases that may run out.
CREATE INDEX reconciliation_runs_queued ON reconciliation_runs (requested_at) WHERE status = 'queued';
CREATE INDEX reconciliation_runs_leased ON reconciliation_runs (lease_until) WHERE status = 'running';
-- The admin list, newest first, of every run or of one tenant's (and the retention purge, oldest first).
CREATE INDEX reconciliation_runs_list ON reconciliation_runs (requested_at DESC, id DESC);
CREATE INDEX reconciliation_runs_partition ON reconciliation_runs (tenant_id, mode, requested_at DESC, id DESC);
-- GET /v1/admin/reconciliation/runs/{id} names a run by its id alone (a platform-wide admin read).
CREATE INDEX reconciliation_runs_by_id ON reconciliation_runs (id);

-- The evidence: what disagrees with what. At most a bounded number per check and run are stored (the
-- run counts the rest), so a run over a badly broken ledger stays a bounded write.
CREATE TABLE reconciliation_discrepancies (
  tenant_id    uuid NOT NULL,
  run_id       uuid NOT NULL,
  seq          integer NOT NULL,
  check_name   text NOT NULL,
  subject_type text NOT NULL,
  subject_id   text NOT NULL,
  -- What of the subject disagrees: an account (`BS/in_flight`), an event type, `entries`, `amount`…
  facet        text NOT NULL,
  payment_id   uuid,
  expected     text NOT NULL,
  found        text NOT NULL,
  detail       jsonb NOT NULL,
  PRIMARY KEY (tenant_id, run_id, seq),
  FOREIGN KEY (tenant_id, run_id) REFERENCES reconciliation_runs (tenant_id, id) ON DELETE CASCADE
);

-- Where each tenant and mode stands, kept by every completed run: what the metrics read on scrape
-- (one row per tenant and mode, however many runs are kept).
CREATE TABLE reconciliation_partitions (
  tenant_id          uuid NOT NULL REFERENCES tenants (id),
  mode               text NOT NULL CHECK (mode IN ('test', 'live')),
  first_completed_at timestamptz NOT NULL,
  last_run_id        uuid NOT NULL,
  last_completed_at  timestamptz NOT NULL,
  last_clean_at      timestamptz,
  -- The last completed run's discrepancies by check: {"<check>": n}.
  last_discrepancies jsonb NOT NULL,
  PRIMARY KEY (tenant_id, mode)
);
