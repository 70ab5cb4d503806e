-- The daily pull of each live connector's statement from the bank: one row per rail and day, claimed
-- by one worker process at a time (leased_until), retried after a backoff (next_attempt_at), done once
-- that day's statement is matched, given up after a bounded number of attempts with an anomaly.
CREATE TABLE rail_statement_pulls (
  rail            text NOT NULL CHECK (char_length(rail) BETWEEN 1 AND 64),
  value_date      date NOT NULL,
  attempts        integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  -- Not before this is it tried again: the backoff after a failed attempt.
  next_attempt_at timestamptz NOT NULL,
  -- The attempt under way is a process's until then (a process killed mid-pull is replaced after it).
  leased_until    timestamptz,
  last_attempt_at timestamptz,
  -- What the last failed attempt met (the kind of failure, never a URL or a secret).
  last_error      text CHECK (char_length(last_error) <= 500),
  statement_id    uuid REFERENCES rail_statements (id),
  done_at         timestamptz,
  gave_up_at      timestamptz,
  PRIMARY KEY (rail, value_date),
  CHECK (done_at IS NULL OR statement_id IS NOT NULL),
  CHECK (done_at IS NULL OR gave_up_at IS NULL)
);
-- The admin view: each rail's latest day.
CREATE INDEX rail_statement_pulls_latest ON rail_statement_pulls (rail, value_date DESC);

ALTER TABLE anomalies DROP CONSTRAINT anomalies_kind_check;
ALTER TABLE anomalies ADD CONSTRAINT anomalies_kind_check CHECK (kind IN (
  'settled_after_failed', 'failed_after_settled', 'return_of_failed', 'return_of_unresolved',
  'unknown_reference', 'amount_mismatch', 'bank_reference_mismatch', 'reconciliation_discrepancy',
  'statement_unknown_reference', 'statement_missing_at_rail', 'statement_amount_mismatch',
  'statement_status_mismatch', 'statement_bank_reference_mismatch',
  'reference_mismatch', 'unreadable_answer', 'implausible_settled_at', 'resend_exhausted',
  'statement_pull_failed'));
