-- The inbox of a connector's callbacks (POST /v1/rails/{rail}/callbacks): every verified event a bank
-- gateway pushed to us — a transfer's outcome, a return — kept exactly as received, once per event id
-- (a gateway redelivers until we answer 2xx, and we answer only once the row is committed). The rail
-- adapter hands the unacknowledged rows to the reaper oldest first; the reaper acknowledges one only
-- once its effect (or the anomaly it is) is committed.
CREATE TABLE rail_inbox (
  rail            text NOT NULL CHECK (char_length(rail) BETWEEN 1 AND 64),
  event_id        text NOT NULL CHECK (char_length(event_id) BETWEEN 1 AND 128),
  payload         jsonb NOT NULL,
  -- When the gateway says the event happened: the order the reaper applies them in.
  occurred_at     timestamptz NOT NULL,
  received_at     timestamptz NOT NULL,
  acknowledged_at timestamptz,
  PRIMARY KEY (rail, event_id)
);

-- pendingNotifications: one rail's unacknowledged events, oldest first.
CREATE INDEX rail_inbox_pending ON rail_inbox (rail, occurred_at, event_id) WHERE acknowledged_at IS NULL;
-- The purge of acknowledged events past their retention (workers/rail-inbox-purge.ts).
CREATE INDEX rail_inbox_acknowledged ON rail_inbox (acknowledged_at) WHERE acknowledged_at IS NOT NULL;
