// What a payment says about itself: the readable `message` of each state and failure reason, and the
// webhook payload of each outcome event.
import type { Metadata } from './metadata.ts';

/** What the payout answer and the statement say for each state. */
export const STATUS_MESSAGES = {
  pending:
    'Accepted and charged, waiting for a rail: the bank connection is down right now (its circuit breaker is open), so it has not been sent yet. It is sent as soon as the rail is back, in arrival order; if that takes longer than the rail queue bound it fails bank_unreachable with the money back. Do not retry: the outcome arrives by webhook.',
  submitted:
    'Accepted and settling through the rail, asynchronously. Do not retry: the outcome arrives by webhook (payment.settled or payment.failed).',
  settled: 'Settled: the beneficiary has the funds.',
  unknown:
    'The rail did not confirm the send. Do not retry: we are resolving it with the rail using our own reference, and the outcome arrives by webhook.',
  reversed:
    'The bank returned this settled disbursement; the delivered amount is back in your balance (the fee is kept).',
} as const;

/**
 * Every reason a payout fails for (`reason` of a failed payout and of `payment.failed`), with its message.
 * @internal Exported for its tests, not used elsewhere.
 */
export const FAILURE_MESSAGES = {
  beneficiary_missing_phone:
    'The beneficiary has no phone number; both instruments need one. Register it and retry with a new quote.',
  beneficiary_missing_account:
    'The beneficiary has no account number, which transferencia needs. Register one, or use pago_movil, with a new quote.',
  beneficiary_mismatch: 'The bank says the name or national id does not match the holder of the account or phone.',
  amount_below_rail_minimum:
    'The amount is below the rail floor per operation (1 token at the current rate). Quote a larger amount.',
  sender_required:
    'No sender: send a sender block, a customerId with a stored sender, or configure a default sender for the program.',
  instrument_unsupported: 'The requested instrument is not available for this beneficiary.',
  invalid_destination_account: 'The destination account is invalid or closed.',
  bank_unreachable: 'The beneficiary bank did not answer. Retry later with a new quote.',
  rail_rejected: 'The rail rejected the send.',
  rail_insufficient_balance: 'The rail had insufficient balance to send.',
  amount_above_rail_limit: 'The amount is above the rail limit.',
  no_route: 'No rail can deliver this payout.',
} as const satisfies Record<string, string>;

export type PayoutFailureReason = keyof typeof FAILURE_MESSAGES;
export const PAYOUT_FAILURE_REASONS = Object.keys(FAILURE_MESSAGES) as PayoutFailureReason[];

export function failureMessage(reason: string): string {
  return (
    (FAILURE_MESSAGES as Record<string, string>)[reason] ?? 'The disbursement was not executed; nothing was charged.'
  );
}

export type OutcomeEventType = 'payment.settled' | 'payment.failed' | 'payment.reversed';

/** The fields of a payment an event payload reads. */
export interface PayloadSource {
  id: string;
  payout_asset: string;
  payout_amount: bigint;
  bank_reference: string | null;
  method: string | null;
  method_requested: string;
  status_reason: string | null;
  metadata: Metadata;
}

/**
 * Webhook payloads: settled {paymentId, asset, amount, bankReference, method}; failed adds reason;
 * reversed both. Each ends with the payout's metadata, so a receiver reconciles without a read.
 */
export function eventPayload(payment: PayloadSource, type: OutcomeEventType, reason?: string): Record<string, unknown> {
  const base = { paymentId: payment.id, asset: payment.payout_asset, amount: payment.payout_amount.toString() };
  const { metadata } = payment;
  if (type === 'payment.settled')
    return { ...base, bankReference: payment.bank_reference, method: payment.method, metadata };
  if (type === 'payment.failed')
    return {
      ...base,
      method: payment.method ?? payment.method_requested,
      reason: reason ?? payment.status_reason,
      metadata,
    };
  return {
    ...base,
    bankReference: payment.bank_reference,
    method: payment.method,
    reason: reason ?? payment.status_reason,
    metadata,
  };
}
