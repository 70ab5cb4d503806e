-- The audit trail's retention: rows older than AUDIT_RETENTION_DAYS are archived to JSON-lines files,
-- each line carrying the hash of the one before (a removed or altered row breaks the chain), and then
-- removed. One row here per archive file, in order; it is what allows the removal.
CREATE TABLE audit_archives (
  seq                 integer PRIMARY KEY CHECK (seq >= 1),
  -- The last row archived, by (created_at, id): every row at or before it is in an archive.
  through_created_at  timestamptz NOT NULL,
  through_id          uuid NOT NULL,
  row_count           integer NOT NULL CHECK (row_count > 0),
  file                text NOT NULL CHECK (char_length(file) BETWEEN 1 AND 200),
  -- The chain: the previous archive's last_hash (64 zeros for the first), this file's last line's hash.
  prev_hash           text NOT NULL CHECK (prev_hash ~ '^[0-9a-f]{64}$'),
  last_hash           text NOT NULL CHECK (last_hash ~ '^[0-9a-f]{64}$'),
  file_sha256         text NOT NULL CHECK (file_sha256 ~ '^[0-9a-f]{64}$'),
  archived_at         timestamptz NOT NULL,
  -- The transaction that recorded it: the only one allowed to remove the rows it holds (below).
  archived_by_xact    bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint)
);

CREATE FUNCTION audit_archives_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_archives is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_archives_no_update_or_delete BEFORE UPDATE OR DELETE ON audit_archives
  FOR EACH ROW EXECUTE FUNCTION audit_archives_append_only();
CREATE TRIGGER audit_archives_no_truncate BEFORE TRUNCATE ON audit_archives
  FOR EACH STATEMENT EXECUTE FUNCTION audit_archives_append_only();

-- The audit trail stays append-only, with one way out: a row may be deleted only by the transaction
-- that records the archive holding it (an audit_archives row inserted by that same transaction, whose
-- range covers the row). Any other UPDATE, DELETE or TRUNCATE is refused, whoever asks.
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' AND EXISTS (
    SELECT 1 FROM audit_archives a
     WHERE a.archived_by_xact = pg_current_xact_id()::text::bigint
       AND (OLD.created_at, OLD.id) <= (a.through_created_at, a.through_id)
  ) THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
