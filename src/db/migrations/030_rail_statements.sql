-- Rail statements: a rail's settlement statement for one day (a CSV the operator posts), checked line
-- by line against our payments of that rail. Like a reconciliation run it only reads our records and
-- stores what it found: it never changes a payment or the ledger.

-- Every mismatch a statement finds opens an anomaly of its own kind.
ALTER TABLE anomalies DROP CONSTRAINT anomalies_kind_check;
ALTER TABLE anomalies ADD CONSTRAINT anomalies_kind_check CHECK (kind IN (
  'settled_after_failed', 'failed_after_settled', 'return_of_failed', 'return_of_unresolved',
  'unknown_reference', 'amount_mismatch', 'bank_reference_mismatch', 'reconciliation_discrepancy',
  'statement_unknown_reference', 'statement_missing_at_rail', 'statement_amount_mismatch',
  'statement_status_mismatch', 'statement_bank_reference_mismatch'));

-- One row per statement file of a rail and day: what it counted, who posted it. The same file posted
-- again is this row (one per rail, day and SHA-256 of the bytes as they came); another file of the same
-- day is another row. Platform-wide: a rail carries every tenant's payments.
CREATE TABLE rail_statements (
  id                      uuid PRIMARY KEY,
  rail                    text NOT NULL CHECK (char_length(rail) BETWEEN 1 AND 64),
  value_date              date NOT NULL,
  file_sha256             text NOT NULL CHECK (file_sha256 ~ '^[0-9a-f]{64}$'),
  file_bytes              bigint NOT NULL CHECK (file_bytes >= 0),
  -- Data lines (the header not counted).
  line_count              integer NOT NULL CHECK (line_count >= 0),
  -- The header name each standard column was read from: {"reference": "Referencia", …}.
  columns                 jsonb NOT NULL,
  -- Counts by result. A line may disagree in more than one way (amount and bank reference), so the
  -- mismatches of a line are counted each; `matched` counts lines with none.
  matched                 integer NOT NULL DEFAULT 0 CHECK (matched >= 0),
  unknown_reference       integer NOT NULL DEFAULT 0 CHECK (unknown_reference >= 0),
  missing_at_rail         integer NOT NULL DEFAULT 0 CHECK (missing_at_rail >= 0),
  amount_mismatch         integer NOT NULL DEFAULT 0 CHECK (amount_mismatch >= 0),
  status_mismatch         integer NOT NULL DEFAULT 0 CHECK (status_mismatch >= 0),
  bank_reference_mismatch integer NOT NULL DEFAULT 0 CHECK (bank_reference_mismatch >= 0),
  -- Anomalies this statement opened (the others it found were open already, from an earlier file).
  anomalies_opened        integer NOT NULL DEFAULT 0 CHECK (anomalies_opened >= 0),
  created_at              timestamptz NOT NULL,
  -- The API key that posted it.
  created_by              uuid NOT NULL
);
CREATE UNIQUE INDEX rail_statements_once ON rail_statements (rail, value_date, file_sha256);
-- GET /v1/admin/rails/{rail}/statements: newest first.
CREATE INDEX rail_statements_by_rail ON rail_statements (rail, created_at DESC, id DESC);

-- The evidence: one row per mismatch, with both sides. Matched lines are only counted.
CREATE TABLE rail_statement_mismatches (
  statement_id uuid NOT NULL REFERENCES rail_statements (id) ON DELETE CASCADE,
  seq          integer NOT NULL CHECK (seq >= 1),
  result       text NOT NULL CHECK (result IN ('unknown_reference', 'missing_at_rail', 'amount_mismatch', 'status_mismatch', 'bank_reference_mismatch')),
  -- The file's line (the header is line 1); null for a payment of ours the file does not name.
  line         integer CHECK (line >= 2),
  reference    text NOT NULL CHECK (char_length(reference) BETWEEN 1 AND 100),
  tenant_id    uuid,
  mode         text CHECK (mode IN ('test', 'live')),
  payment_id   uuid,
  ours         jsonb NOT NULL,
  theirs       jsonb NOT NULL,
  anomaly_id   uuid NOT NULL,
  PRIMARY KEY (statement_id, seq),
  CHECK ((result = 'missing_at_rail') = (line IS NULL)),
  CHECK ((result = 'unknown_reference') = (payment_id IS NULL))
);

-- A line names a payment by its id alone (no tenant): found among that rail's payments. Also says
-- whether a rail has carried any payment (an unknown rail is a 404). The rail is written with the
-- payment's insert and never changed, so this index costs one entry per payment and no update.
CREATE INDEX payments_by_rail ON payments (rail, id) WHERE rail IS NOT NULL;
-- The payments a statement expects: that rail's, settled (or settled and since returned) on that
-- America/Caracas day. settled_at is set once, at settlement, which already updates the settled-day
-- indexes of 007.
CREATE INDEX payments_rail_settled_day ON payments (rail, ((settled_at AT TIME ZONE 'America/Caracas')::date), id)
  WHERE settled_at IS NOT NULL AND rail IS NOT NULL;
