-- Payout batches (docs/payout-batches.md): many payouts in one call. A batch is its request (the
-- Idempotency-Key that names it, the fingerprint of its body) and the result of each of its items;
-- each payment it created is an ordinary payment that names its batch.
--
-- A batch is `receiving` while a request records its items (it holds the batch until `leased_until`;
-- a request that died leaves it to a retry with the same key once the lease has passed), then
-- `processing` until every payment is final, when `completed_at` is set. The key names its batch for
-- as long as the batch exists.
CREATE TABLE payout_batches (
  tenant_id         uuid NOT NULL REFERENCES tenants (id),
  mode              text NOT NULL CHECK (mode IN ('test', 'live')),
  id                uuid NOT NULL,
  idempotency_key   text NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
  fingerprint       text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
  item_count        integer NOT NULL CHECK (item_count BETWEEN 1 AND 100000),
  status            text NOT NULL CHECK (status IN ('receiving', 'processing', 'completed')),
  leased_until      timestamptz,
  created_by_key_id uuid,
  created_at        timestamptz NOT NULL,
  received_at       timestamptz,
  completed_at      timestamptz,
  PRIMARY KEY (tenant_id, mode, id),
  UNIQUE (tenant_id, mode, idempotency_key),
  CHECK ((status = 'receiving') = (leased_until IS NOT NULL)),
  CHECK ((status = 'receiving') = (received_at IS NULL)),
  CHECK ((status = 'completed') = (completed_at IS NOT NULL))
);
-- The list, newest first (cursor on created_at, id).
CREATE INDEX payout_batches_by_creation ON payout_batches (tenant_id, mode, created_at DESC, id DESC);

-- One row per item: its reference and what became of it. A payment (created by this batch, or by an
-- earlier one with the same reference) or a refusal (the error a single payout would have answered,
-- and no payment).
CREATE TABLE payout_batch_items (
  tenant_id   uuid NOT NULL,
  mode        text NOT NULL CHECK (mode IN ('test', 'live')),
  batch_id    uuid NOT NULL,
  item_index  integer NOT NULL CHECK (item_index >= 0),
  reference   text NOT NULL CHECK (char_length(reference) BETWEEN 1 AND 64),
  payment_id  uuid,
  -- BS minor units the item asked to deliver (its quote's), when known.
  amount      bigint CHECK (amount > 0),
  refusal     jsonb,
  PRIMARY KEY (tenant_id, mode, batch_id, item_index),
  FOREIGN KEY (tenant_id, mode, batch_id) REFERENCES payout_batches (tenant_id, mode, id),
  CHECK ((payment_id IS NULL) <> (refusal IS NULL))
);

-- The batch that created a payment (null: a single payout).
ALTER TABLE payments ADD COLUMN batch_id uuid;
-- GET /v1/payments?batchId=… and the batch's counts: only payments made by a batch are in it.
CREATE INDEX payments_by_batch ON payments (tenant_id, mode, batch_id, created_at DESC, id DESC) WHERE batch_id IS NOT NULL;
