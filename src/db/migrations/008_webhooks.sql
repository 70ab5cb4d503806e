-- Webhooks: one endpoint per program (tenant, mode), the delivery
-- log of every attempt, the lease that lets several dispatcher processes share the outbox, and the
-- sandbox sink's inbox.

-- The signing secret is kept in clear: it must sign every delivery (an HMAC key cannot be hashed
-- away). It is never logged and never returned except by the admin call that sets or rotates it.
-- Rotation keeps the previous secret signing until previous_secret_expires_at (the overlap window).
CREATE TABLE webhook_endpoints (
  tenant_id                  uuid NOT NULL REFERENCES tenants (id),
  mode                       text NOT NULL CHECK (mode IN ('test', 'live')),
  url                        text NOT NULL CHECK (char_length(url) BETWEEN 1 AND 2048),
  -- scheme://host[:port] of url: the receiver, for the dispatcher's per-receiver concurrency limit.
  origin                     text NOT NULL,
  secret                     text NOT NULL CHECK (secret ~ '^whsec_[0-9A-Za-z]{32,}$'),
  previous_secret            text CHECK (previous_secret ~ '^whsec_[0-9A-Za-z]{32,}$'),
  previous_secret_expires_at timestamptz,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  updated_at                 timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, mode),
  CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL))
);

-- The dispatcher's lease: a claimed event is skipped by every other dispatcher until locked_until,
-- and only the holder of lease_token may record the attempt. A dispatcher that dies mid-delivery
-- records nothing; its lease expires and the same attempt is delivered again (at-least-once).
ALTER TABLE outbox_events ADD COLUMN locked_until timestamptz;
ALTER TABLE outbox_events ADD COLUMN lease_token uuid;
ALTER TABLE outbox_events ADD CONSTRAINT outbox_events_dead_shape
  CHECK (status <> 'dead' OR (dead_at IS NOT NULL AND next_attempt_at IS NULL));
ALTER TABLE outbox_events ADD CONSTRAINT outbox_events_published_shape
  CHECK (status <> 'published' OR published_at IS NOT NULL);
ALTER TABLE outbox_events ADD CONSTRAINT outbox_events_attempts_non_negative CHECK (attempts >= 0);
-- The failed queue of one program, for POST /v1/events/retry-dead.
CREATE INDEX outbox_dead ON outbox_events (tenant_id, mode, id) WHERE status = 'dead';
-- The due-claim query reads pending events in (next_attempt_at, id) order and stops at its limit:
-- with id in the index no sort of the whole due set is needed, even when many events share a time.
DROP INDEX outbox_due;
CREATE INDEX outbox_due ON outbox_events (next_attempt_at, id) WHERE status = 'pending';

-- One row per delivery attempt: status_code is null when no HTTP answer came (timeout, refused
-- connection, no endpoint configured). The primary key makes a recorded attempt unique.
CREATE TABLE webhook_deliveries (
  tenant_id   uuid NOT NULL,
  event_id    bigint NOT NULL,
  attempt     integer NOT NULL CHECK (attempt >= 1),
  status_code integer CHECK (status_code BETWEEN 100 AND 599),
  ok          boolean NOT NULL,
  error       text,
  duration_ms integer NOT NULL CHECK (duration_ms >= 0),
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, event_id, attempt),
  FOREIGN KEY (tenant_id, event_id) REFERENCES outbox_events (tenant_id, id),
  CHECK (ok = (error IS NULL))
);

-- What the built-in sandbox sink received: the headers and the raw body exactly as
-- they arrived, and whether the signature verified against the program's secrets. Bounded per
-- program: the sink keeps the most recent receipts only.
CREATE TABLE sandbox_webhook_receipts (
  tenant_id          uuid NOT NULL REFERENCES tenants (id),
  mode               text NOT NULL CHECK (mode IN ('test', 'live')),
  id                 bigserial,
  event_id           bigint,
  headers            jsonb NOT NULL,
  raw_body           text NOT NULL,
  signature_verified boolean NOT NULL,
  received_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX sandbox_webhook_receipts_list ON sandbox_webhook_receipts (tenant_id, mode, id DESC);
