// A payout batch's item: its request, the key its reference gives it, and what it became. Pure.
import { canonicalJson } from '../domain/canonical-json.ts';
import type { ApiError } from '../domain/errors.ts';
import type { PayoutRequest } from './payouts.ts';

/** One item as sent: a payout's body, with `deliver` instead of `quoteId` if wanted, and its reference. */
export type BatchItemRequest = Omit<PayoutRequest, 'quoteId'> & {
  reference: string;
  quoteId?: string;
  deliver?: { asset: 'BS'; amount: number };
};

export type ItemOutcome =
  | { kind: 'payment'; paymentId: string }
  | { kind: 'refused'; refusal: { code: string; message: string; meta?: Record<string, unknown> } };

/**
 * The Idempotency-Key an item's reference stands for: one per (tenant, mode) reference, kept as long
 * as keys are (IDEMPOTENCY_TTL_HOURS), so a reference pays at most once. The tab keeps it apart from
 * every key a client can send (printable ASCII only).
 */
export function itemKeyOf(reference: string): string {
  return `payout-batch-item\t${reference}`;
}

/** What an item's key is the fingerprint of: the item as sent, whatever its position in a batch. */
export function canonicalItem(item: BatchItemRequest): string {
  return `POST /v1/payout-batches item\n${canonicalJson(item)}`;
}

/** A refused item: the error a single payout would have answered, and no payment. */
export function refusalOf(error: ApiError): ItemOutcome {
  return {
    kind: 'refused',
    refusal: { code: error.code, message: error.message, ...(error.meta ? { meta: error.meta } : {}) },
  };
}
