-- The age of the oldest undelivered event (bolivar_outbox_oldest_pending_age_seconds) in one index
-- probe, whatever the size of the outbox: only pending events are in it, and a delivered one leaves
-- it. No existing index orders pending events by creation (outbox_due orders them by their next
-- attempt, which a retry moves into the future).
CREATE INDEX outbox_pending_created ON outbox_events (created_at) WHERE status = 'pending';
