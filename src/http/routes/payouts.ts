import type { PaymentRow } from '../../db/repositories/payments.ts';
import type { PayoutService } from '../../services/payouts.ts';
import { partitionOf } from '../context.ts';
import { errorResponses } from '../schemas/common.ts';
import { CreatePayoutBody, PayoutResult } from '../schemas/payouts.ts';
import type { App } from '../types.ts';

/** The payout result of interface.md 2.4. */
export function payoutView(p: PaymentRow) {
  const failed = p.status === 'failed';
  return {
    id: p.id,
    status: p.status,
    bankReference: p.bank_reference,
    asset: p.payout_asset,
    amount: p.payout_amount.toString(),
    feeAmount: failed ? '0' : p.fee_amount.toString(),
    // Absent on unknown: nobody knows yet whether it left.
    ...(p.status === 'unknown' ? {} : { totalDebited: failed ? '0' : (p.payout_amount + p.fee_amount).toString() }),
    method: p.method,
    methodRequested: p.method_requested,
    methodChanged: p.method_changed,
    message: p.message,
    reason: failed ? p.status_reason : null,
    beneficiaryId: p.beneficiary_id!,
    beneficiary: {
      fullName: p.beneficiary.fullName,
      nationalId: p.beneficiary.nationalId,
      bankCode: p.beneficiary.bankCode,
      instrument: p.beneficiary.instrument,
    },
  };
}

export async function payoutRoutes(app: App, payouts: PayoutService): Promise<void> {
  app.post(
    '/v1/payouts',
    {
      config: { scopes: ['payments:write'], idempotency: 'required' },
      schema: {
        tags: ['Payouts'],
        operationId: 'createPayout',
        summary: 'Disburse bolivares',
        description: `Moves money: consumes the quote, charges the source balance (or credit line) and sends through the rail.

The usual answer is 201 \`submitted\`; the outcome arrives by webhook (\`payment.settled\` or \`payment.failed\`). Never retry
\`submitted\` or \`unknown\`: wait for the webhook or read \`GET /v1/payments/{id}\`. A rail rejection is 201 with
\`status: failed\` and a \`reason\` (nothing charged), not an HTTP error.

Requires an \`Idempotency-Key\` header: the same key with the same body returns the original answer (header
\`idempotent-replayed: true\`); with a different body, 409 \`idempotency_key_reused\`.

Errors, in the order they are checked: 400 validation, 404 unknown quote or beneficiary, 409 \`quote_already_consumed\`,
422 \`quote_expired\`, 422 \`limit_exceeded\` (instrument cap or configured limit; \`meta\` names rule, cap and scope),
422 \`insufficient_tenant_funds\`.`,
        body: CreatePayoutBody,
        response: { 201: PayoutResult, ...errorResponses(400, 403, 404, 409, 422, 503) },
      },
    },
    async (request, reply) => {
      const payment = await payouts.create(partitionOf(request.auth), request.body as never);
      return reply.code(201).send(payoutView(payment));
    },
  );
}
