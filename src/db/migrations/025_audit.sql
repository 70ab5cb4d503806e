-- Who did what.
--
-- A payment keeps the id of the API key that created it, written by the payout batch's own insert.
-- No foreign key: keys are never deleted (only revoked), and a foreign-key check is one more index
-- probe per payout on the service's hottest statement. Payments made before this column existed
-- have NULL.
ALTER TABLE payments ADD COLUMN created_by_key_id uuid;

-- Every admin or operator action, written in the same transaction as the change it records. A
-- platform table, not a tenant-owned one: many actions have no tenant (a rate, a platform limit
-- rule), and it is read only by the platform key, across tenants.
CREATE TABLE audit_log (
  id               uuid PRIMARY KEY,
  created_at       timestamptz NOT NULL DEFAULT now(),
  actor_key_id     uuid NOT NULL,
  actor_tenant_id  uuid NOT NULL,
  action           text NOT NULL CHECK (action ~ '^[a-z_]+(\.[a-z_]+)+$' AND length(action) <= 64),
  target_type      text NOT NULL CHECK (target_type ~ '^[a-z_]+$' AND length(target_type) <= 40),
  target_id        text NOT NULL CHECK (length(target_id) BETWEEN 1 AND 200),
  target_tenant_id uuid,
  target_mode      text CHECK (target_mode IN ('test', 'live')),
  -- Redacted before they are written (src/domain/audit.ts): never a secret, a key or its hash, a
  -- full account number or phone.
  before           jsonb,
  after            jsonb,
  request_id       text CHECK (length(request_id) <= 128)
);

-- The lists: newest first, whole or narrowed to an actor, a target or a tenant.
CREATE INDEX audit_log_by_time ON audit_log (created_at DESC, id DESC);
CREATE INDEX audit_log_by_actor ON audit_log (actor_key_id, created_at DESC, id DESC);
CREATE INDEX audit_log_by_target ON audit_log (target_type, target_id, created_at DESC, id DESC);
CREATE INDEX audit_log_by_tenant ON audit_log (target_tenant_id, created_at DESC, id DESC) WHERE target_tenant_id IS NOT NULL;

-- Append-only: the database itself refuses to change or remove a row, whoever asks.
CREATE FUNCTION audit_log_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_log_no_update_or_delete BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
