// The API errors of a payout that is refused rather than made: what the batch's decision refused
// (quote, limits, funds), and an Idempotency-Key that names another request or one still running.
import { ApiError, notFound } from '../domain/errors.ts';
import type { LimitBreach } from '../domain/instrument-caps.ts';
import type { PayoutRefusal } from '../domain/commit/payout-decision.ts';

/** The HTTP error of a payout the batch refused. */
export function refusalError(refusal: PayoutRefusal): ApiError {
  switch (refusal.code) {
    case 'quote_missing':
      return notFound('quote');
    case 'quote_already_consumed':
      return new ApiError('quote_already_consumed', 'This quote was already used by a payout. Create a new quote.');
    case 'quote_expired':
      return new ApiError('quote_expired', 'This quote has expired. Create a new quote and pay with it.');
    case 'limit_exceeded':
      return limitExceeded(refusal.breach);
    case 'insufficient_tenant_funds': {
      const f = refusal.funds;
      if (f.funding === 'prefunding') {
        return new ApiError(
          'insufficient_tenant_funds',
          `The prefunding balance does not cover this payout: ${f.required} ${f.asset} minor units needed.`,
          {
            asset: f.asset,
            required: f.required.toString(),
            available: f.available.toString(),
          },
        );
      }
      return new ApiError(
        'insufficient_tenant_funds',
        `This payout would take ${f.asset} credit drawn past the credit limit of ${f.creditLimit} minor units.`,
        {
          asset: f.asset,
          required: f.required.toString(),
          credit_drawn: f.creditDrawn.toString(),
          credit_limit: f.creditLimit.toString(),
        },
      );
    }
  }
}

/** 422 `limit_exceeded`, naming the rule, its cap and scope in `meta`. */
function limitExceeded(breach: LimitBreach): ApiError {
  const where =
    breach.scope === 'instrument'
      ? `the ${breach.method} per-operation cap`
      : `the ${breach.scope} ${breach.rule} limit`;
  return new ApiError(
    'limit_exceeded',
    `The payout exceeds ${where} of ${breach.cap} minor units by ${breach.exceededBy}.`,
    {
      rule: breach.rule,
      cap: breach.cap.toString(),
      scope: breach.scope,
      method: breach.method,
      attempted: breach.attempted.toString(),
      exceeded_by: breach.exceededBy.toString(),
      ...(breach.ruleId ? { rule_id: breach.ruleId } : {}),
    },
  );
}

export const keyReused = () =>
  new ApiError(
    'idempotency_key_reused',
    'This Idempotency-Key was already used for a different request (another route or body). Use a new key for a new operation.',
  );

export const keyInProgress = () =>
  new ApiError(
    'idempotency_request_in_progress',
    'A request with this Idempotency-Key is still being processed. Retry the same request in a moment: you will get its result once it finishes.',
  );
