// Why a rail failed a payout: the `reason` a failed payout carries. A domain word, not a rail detail:
// the rails return these, the sandbox rail's table stores them and the sandbox simulation offers them.

/** The payout rejection reasons (`reason` of a failed payout) that a rail can return. */
export const RAIL_FAILURE_REASONS = [
  'beneficiary_mismatch',
  'invalid_destination_account',
  'bank_unreachable',
  'instrument_unsupported',
  'rail_insufficient_balance',
  'rail_rejected',
  'amount_above_rail_limit',
] as const;

export type RailFailureReason = (typeof RAIL_FAILURE_REASONS)[number];
