-- Payouts waiting for a rail: accepted and charged while every rail that may carry them had its
-- circuit breaker open, `pending` (`awaiting_rail`) until the reaper sends them, in arrival order,
-- or fails them past the rail queue's bound. The reaper's claim reads them by this index.
CREATE INDEX payments_waiting ON payments (created_at) WHERE status = 'pending';
