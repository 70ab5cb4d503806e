// The one table between the gateway's words and ours (docs/http-bank.md lists it): its transfer
// statuses to our rail statuses, its error codes to our failure reasons. Anything it says that is not
// in the table is read as "the rail has not confirmed" — never as a failure: a failure we invented
// would release money the bank may still pay out.
import type { RailFailureReason } from '../../domain/failure-reasons.ts';
import type { RailEcho } from '../../domain/rail-answer-check.ts';
import type { RailStatus } from '../rail.ts';
import type { GatewayTransfer } from './protocol.ts';
import { assert } from '../../domain/assert.ts';

/**
 * Gateway status → how our side reads it.
 * @internal Exported for its tests, not used elsewhere.
 */
export const GATEWAY_STATUS_MAP: Readonly<
  Record<string, 'processing' | 'settled' | 'failed' | 'unconfirmed' | 'reversed'>
> = {
  RECEIVED: 'processing',
  PROCESSING: 'processing',
  /** The bank holds it for review: it may still pay. */
  ON_HOLD: 'unconfirmed',
  SETTLED: 'settled',
  REJECTED: 'failed',
  RETURNED: 'reversed',
};

/**
 * Gateway error code (of a REJECTED transfer) → our failure reason.
 * @internal Exported for its tests, not used elsewhere.
 */
export const GATEWAY_ERROR_MAP: Readonly<Record<string, RailFailureReason>> = {
  ACCOUNT_INVALID: 'invalid_destination_account',
  ACCOUNT_CLOSED: 'invalid_destination_account',
  BENEFICIARY_NAME_MISMATCH: 'beneficiary_mismatch',
  BENEFICIARY_ID_MISMATCH: 'beneficiary_mismatch',
  DESTINATION_BANK_OFFLINE: 'bank_unreachable',
  INSTRUMENT_NOT_SUPPORTED: 'instrument_unsupported',
  INSUFFICIENT_FUNDS: 'rail_insufficient_balance',
  AMOUNT_OVER_LIMIT: 'amount_above_rail_limit',
  REJECTED_BY_BANK: 'rail_rejected',
};

/**
 * The reason a return carries when the gateway gives none we can store.
 * @internal Exported for its tests, not used elsewhere.
 */
export const DEFAULT_RETURN_REASON = 'returned_by_bank';
const RETURN_REASON = /^[a-z0-9_]{1,64}$/;

/**
 * The gateway error code that means `reason` (the first in the table): how a simulator is told to fail.
 * @internal Exported for its tests, not used elsewhere.
 */
export function gatewayErrorCodeOf(reason: RailFailureReason): string {
  const found = Object.entries(GATEWAY_ERROR_MAP).find(([, ours]) => ours === reason);
  assert(found, `no gateway error code maps to ${reason}`);
  return found[0];
}

/** A return's reason as we store it: the gateway's when it is a plain code, else DEFAULT_RETURN_REASON. */
function returnReasonOf(transfer: GatewayTransfer): string {
  const given = transfer.returnReason?.toLowerCase();
  return given !== undefined && RETURN_REASON.test(given) ? given : DEFAULT_RETURN_REASON;
}

function dateOf(text: string | undefined, fallback: Date): Date {
  const parsed = text === undefined ? Number.NaN : Date.parse(text);
  return Number.isNaN(parsed) ? fallback : new Date(parsed);
}

/**
 * What a gateway transfer says, as our RailStatus. A SETTLED or RETURNED one without a bank reference,
 * a REJECTED one with an error code not in the table, and any status not in the table are
 * `unconfirmed`: asked again later, never guessed.
 */
export function railStatusOf(transfer: GatewayTransfer, now: Date): RailStatus {
  // Own keys only: a status such as "constructor" is not in the table.
  const ours = Object.hasOwn(GATEWAY_STATUS_MAP, transfer.status) ? GATEWAY_STATUS_MAP[transfer.status] : undefined;
  switch (ours) {
    case 'processing':
      return { status: 'processing' };
    case 'settled':
      if (!transfer.bankReference) return { status: 'unconfirmed' };
      return { status: 'settled', bankReference: transfer.bankReference, settledAt: dateOf(transfer.settledAt, now) };
    case 'failed': {
      const reason =
        transfer.errorCode !== undefined && Object.hasOwn(GATEWAY_ERROR_MAP, transfer.errorCode)
          ? GATEWAY_ERROR_MAP[transfer.errorCode]
          : undefined;
      if (reason === undefined) return { status: 'unconfirmed' };
      return {
        status: 'failed',
        reason,
        ...(transfer.errorMessage ? { message: transfer.errorMessage.slice(0, 200) } : {}),
      };
    }
    case 'reversed':
      if (!transfer.bankReference) return { status: 'unconfirmed' };
      return { status: 'reversed', bankReference: transfer.bankReference, reason: returnReasonOf(transfer) };
    case 'unconfirmed':
    case undefined:
      return { status: 'unconfirmed' };
  }
}

/**
 * What a gateway transfer said about itself, verbatim, for the answer checks (rails/answer-check.ts):
 * its reference, and its amount and bank reference when it gives them (in whatever JSON type it wrote).
 */
export function echoOf(transfer: GatewayTransfer): RailEcho {
  const given = transfer as unknown as Record<string, unknown>;
  return {
    reference: given.reference,
    ...(given.amountMinor !== undefined && given.amountMinor !== null && { amountMinor: given.amountMinor }),
    ...(given.bankReference !== undefined && given.bankReference !== null && { bankReference: given.bankReference }),
  };
}

/** railStatusOf, with the transfer's echo for the answer checks. */
export function checkedStatusOf(transfer: GatewayTransfer, now: Date): RailStatus {
  return { ...railStatusOf(transfer, now), echo: echoOf(transfer) };
}
