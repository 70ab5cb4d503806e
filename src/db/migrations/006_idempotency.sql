-- Idempotency keys: one row per (tenant, mode, key) for IDEMPOTENCY_TTL_HOURS.
-- The row is the claim: INSERT … ON CONFLICT DO NOTHING decides which request runs, so several
-- processes sharing the database agree without any in-process lock.
--   in_progress: a request holds the key until locked_until (a lease: a crashed request does not
--                block the key forever); `owner` identifies that request, so only it completes or
--                releases the row, even after another request took an expired lease over.
--   completed:   response_status and response_body (the exact bytes sent) are replayed.
-- A row past expires_at is treated as absent (taken over by the next request, deleted by the purge).

CREATE TABLE idempotency_keys (
  tenant_id       uuid NOT NULL REFERENCES tenants (id),
  mode            text NOT NULL CHECK (mode IN ('test', 'live')),
  key             text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
  fingerprint     text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  status          text NOT NULL CHECK (status IN ('in_progress', 'completed')),
  owner           uuid,
  response_status integer CHECK (response_status BETWEEN 100 AND 599),
  response_body   text,
  locked_until    timestamptz,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, mode, key),
  CHECK (expires_at > created_at),
  CONSTRAINT idempotency_keys_state CHECK (
    (status = 'in_progress' AND owner IS NOT NULL AND locked_until IS NOT NULL
       AND response_status IS NULL AND response_body IS NULL)
    OR (status = 'completed' AND owner IS NULL AND locked_until IS NULL
       AND response_status IS NOT NULL AND response_body IS NOT NULL)
  )
);

-- The purge deletes expired rows in bounded batches, oldest first.
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
