// The payout's answer, built by the payout path itself: the commit stores its bytes under the
// Idempotency-Key in the money transaction, and a replay sends those bytes again, so the answer is
// built once, here, from the payment row (src/contract/payout-answer.ts is its schema and its type).
import { envelope } from '../contract/error-envelope.ts';
import type { PayoutAnswer } from '../contract/payout-answer.ts';
import type { PaymentRow } from '../db/repositories/payments.ts';
import { checkAccountNumber, checkRif } from '../domain/account-check.ts';
import type { ApiError } from '../domain/errors.ts';

/** The answer of POST /v1/payouts for a payment as it stands. */
function payoutAnswerOf(p: PaymentRow): PayoutAnswer {
  const failed = p.status === 'failed';
  return {
    id: p.id,
    status: p.status,
    bankReference: p.bank_reference,
    asset: p.payout_asset as PayoutAnswer['asset'],
    amount: p.payout_amount.toString(),
    feeAmount: failed ? '0' : p.fee_amount.toString(),
    // Absent on unknown: nobody knows yet whether it left.
    ...(p.status === 'unknown' ? {} : { totalDebited: failed ? '0' : (p.payout_amount + p.fee_amount).toString() }),
    // Never null: a payout that failed before any instrument was used reports the one requested.
    method: p.method ?? p.method_requested,
    methodRequested: p.method_requested,
    methodChanged: p.method_changed,
    message: p.message,
    reason: failed ? (p.status_reason as PayoutAnswer['reason']) : null,
    beneficiaryId: p.beneficiary_id!,
    beneficiary: {
      fullName: p.beneficiary.fullName,
      nationalId: p.beneficiary.nationalId,
      bankCode: p.beneficiary.bankCode,
      instrument: p.beneficiary.instrument,
      accountCheck: checkAccountNumber(p.beneficiary.accountNumber),
      nationalIdCheck: checkRif(p.beneficiary.nationalId),
    },
    metadata: p.metadata,
  };
}

/** The bytes of a payout's answer, as sent and as stored under its key. */
export const payoutAnswerBody = {
  payment: (row: PaymentRow): string => JSON.stringify(payoutAnswerOf(row)),
  error: (error: ApiError, requestId: string): string => JSON.stringify(envelope(error, requestId)),
};
