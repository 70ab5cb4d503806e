-- An answer of a rail that fails the checks against what we sent opens an anomaly of its own kind:
-- an answer about another reference, an amount or bank reference we cannot read, a settlement time
-- outside any sane window, a transfer the rail lost after we sent it again as often as we do.
ALTER TABLE anomalies DROP CONSTRAINT anomalies_kind_check;
ALTER TABLE anomalies ADD CONSTRAINT anomalies_kind_check CHECK (kind IN (
  'settled_after_failed', 'failed_after_settled', 'return_of_failed', 'return_of_unresolved',
  'unknown_reference', 'amount_mismatch', 'bank_reference_mismatch', 'reconciliation_discrepancy',
  'statement_unknown_reference', 'statement_missing_at_rail', 'statement_amount_mismatch',
  'statement_status_mismatch', 'statement_bank_reference_mismatch',
  'reference_mismatch', 'unreadable_answer', 'implausible_settled_at', 'resend_exhausted'));
