-- The rail's "accepted, settling" answer is recorded as its history row only: one insert, instead of
-- an update of the payment row that rewrote it (and, when next_check_at moved, every statement
-- index) on every payout. Recorded once per payment, whichever of the payout path and the reaper
-- hears it first: the unique index decides.
CREATE UNIQUE INDEX payment_transitions_one_rail_acceptance ON payment_transitions (tenant_id, payment_id)
  WHERE reason = 'rail_accepted_async';

ALTER TABLE payments DROP COLUMN rail_acknowledged_at;
