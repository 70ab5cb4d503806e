-- The sandbox sink no longer trusts its URL to name the program: it finds the program through the
-- delivered event (x-event-id) and keeps a delivery only when it is a correctly signed delivery of a
-- test-mode event.

-- The sink is public and unthrottled, so finding an event by its id alone (the primary key starts
-- with the tenant) must not scan the outbox. Only test-mode events are ever looked up: live
-- inserts pay nothing for this index.
CREATE INDEX outbox_test_events_by_id ON outbox_events (id) WHERE mode = 'test';

-- Receipts stored before this change may have been planted by anyone (unverified, or in a live
-- program's listing): they are sandbox data, bounded and disposable, so they go, and the table
-- now holds what the sink stores, verified test-mode deliveries of a known event, and nothing else.
DELETE FROM sandbox_webhook_receipts WHERE NOT signature_verified OR mode <> 'test' OR event_id IS NULL;
ALTER TABLE sandbox_webhook_receipts ALTER COLUMN event_id SET NOT NULL;
ALTER TABLE sandbox_webhook_receipts ADD CONSTRAINT sandbox_webhook_receipts_verified_test_only
  CHECK (signature_verified AND mode = 'test');
