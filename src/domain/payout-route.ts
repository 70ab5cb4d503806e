/**
 * How a payout can be delivered, decided before any rail call (`methodPolicy`,
 * the preferred policy, failures before the rail). Pure: the caller looks up the
 * bank catalogue and asks the rail about availability, then this picks the instrument or the reason.
 *
 * Rules, in order:
 * 1. A phone is required by BOTH instruments, so no phone fails with `beneficiary_missing_phone`
 *    whatever the policy: no fallback can help.
 * 2. An instrument is usable when the bank is in that instrument's catalogue, the rail says it can
 *    deliver through it to this beneficiary, and, for `transferencia`, the beneficiary has an
 *    accountNumber (`pago_movil` needs only the phone).
 * 3. The requested instrument, when usable, is used (`methodChanged: false`).
 * 4. `strict` never switches: `beneficiary_missing_account` when transferencia was requested without
 *    an account (the spec names that reason even if the bank also lacks transferencia), else
 *    `instrument_unsupported`.
 * 5. `preferred` uses the other instrument when it is usable (`methodChanged: true`). Otherwise it
 *    fails with the requested instrument's reason (`beneficiary_missing_account` or
 *    `instrument_unsupported`); when the requested instrument fails for both kinds of cause at once
 *    (no account AND bank/rail unsupported) neither reason alone says what to fix, so `no_route`.
 * Every failure message lists every cause found, for both instruments when both were considered.
 */

import type { Instrument } from './instrument.ts';
/** @internal Exported for its tests, not used elsewhere. */
export interface RouteBeneficiary {
  bankCode: string;
  accountNumber: string | null;
  phone: string | null;
}

export interface RouteInput {
  requested: Instrument;
  policy: 'preferred' | 'strict';
  beneficiary: RouteBeneficiary;
  /** Is `bankCode` in `instrument`'s bank catalogue? */
  inCatalogue: (instrument: Instrument, bankCode: string) => boolean;
  /** The rail's availability answer for this beneficiary, per instrument (precomputed by the caller). */
  railAvailable: Record<Instrument, boolean>;
}

type RouteFailureReason =
  'beneficiary_missing_phone' | 'beneficiary_missing_account' | 'instrument_unsupported' | 'no_route';

export type RouteDecision =
  | { ok: true; method: Instrument; methodChanged: boolean }
  | { ok: false; reason: RouteFailureReason; message: string; methodTried: Instrument };

/** Why one instrument cannot carry this payout. */
type Cause = 'missing_account' | 'not_in_catalogue' | 'rail_unavailable';

const other = (instrument: Instrument): Instrument => (instrument === 'pago_movil' ? 'transferencia' : 'pago_movil');

/** Whitespace-only values are as good as missing: no rail can deliver to them. */
const present = (value: string | null | undefined): boolean => typeof value === 'string' && value.trim() !== '';

function causesFor(instrument: Instrument, input: RouteInput): Cause[] {
  const { bankCode, accountNumber } = input.beneficiary;
  const causes: Cause[] = [];
  if (instrument === 'transferencia' && !present(accountNumber)) causes.push('missing_account');
  if (!input.inCatalogue(instrument, bankCode)) causes.push('not_in_catalogue');
  // Only meaningful for a bank the instrument reaches at all; otherwise it adds noise, not information.
  else if (!input.railAvailable[instrument]) causes.push('rail_unavailable');
  return causes;
}

function explain(instrument: Instrument, cause: Cause, bankCode: string): string {
  switch (cause) {
    case 'missing_account':
      return `the beneficiary has no accountNumber, which ${instrument} needs`;
    case 'not_in_catalogue':
      return `bank ${bankCode} is not in the ${instrument} catalogue (see GET /v1/payouts/banks?method=${instrument})`;
    case 'rail_unavailable':
      return `the rail cannot deliver to this beneficiary through ${instrument} right now`;
  }
}

const capitalise = (text: string): string => `${text.charAt(0).toUpperCase()}${text.slice(1)}`;

/**
 * What the integrator can do, as one sentence. The other instrument is suggested only when it would
 * actually work (strict never looked at it for the decision, but the hint must not mislead).
 */
function remedy(requested: Instrument, causes: Cause[], alternativeUsable: boolean): string {
  const fixes: string[] = [];
  if (causes.includes('missing_account')) fixes.push('give the beneficiary an accountNumber');
  if (causes.includes('not_in_catalogue')) fixes.push(`use a bank from the ${requested} catalogue`);
  if (causes.includes('rail_unavailable')) fixes.push('try again later');
  if (alternativeUsable) fixes.push(`request ${other(requested)}, or send methodPolicy preferred to allow the switch`);
  return `${capitalise(fixes.join(', or '))}. A failed payout consumes its quote, so retry with a new one.`;
}

export function decideRoute(input: RouteInput): RouteDecision {
  const { requested, policy, beneficiary } = input;

  if (!present(beneficiary.phone)) {
    return {
      ok: false,
      reason: 'beneficiary_missing_phone',
      message:
        'The beneficiary has no phone, which both pago_movil and transferencia need; give the beneficiary a phone ' +
        '(04XXXXXXXXX, e.g. 04141234567). A failed payout consumes its quote, so retry with a new one.',
      methodTried: requested,
    };
  }

  const requestedCauses = causesFor(requested, input);
  if (requestedCauses.length === 0) return { ok: true, method: requested, methodChanged: false };

  const alternative = other(requested);
  const alternativeCauses = causesFor(alternative, input);
  const alternativeUsable = alternativeCauses.length === 0;
  const missingAccount = requestedCauses.includes('missing_account');
  const unsupported = requestedCauses.some((cause) => cause !== 'missing_account');
  const why = capitalise(requestedCauses.map((cause) => explain(requested, cause, beneficiary.bankCode)).join('; '));

  if (policy === 'strict') {
    return {
      ok: false,
      reason: missingAccount ? 'beneficiary_missing_account' : 'instrument_unsupported',
      message: `${why}; methodPolicy is strict, so ${alternative} was not tried. ${remedy(requested, requestedCauses, alternativeUsable)}`,
      methodTried: requested,
    };
  }

  if (alternativeUsable) return { ok: true, method: alternative, methodChanged: true };

  const whyNotAlternative = alternativeCauses
    .map((cause) => explain(alternative, cause, beneficiary.bankCode))
    .join('; ');
  return {
    ok: false,
    reason:
      missingAccount && unsupported
        ? 'no_route'
        : missingAccount
          ? 'beneficiary_missing_account'
          : 'instrument_unsupported',
    message: `${why}; ${alternative} cannot be used either: ${whyNotAlternative}. ${remedy(requested, requestedCauses, false)}`,
    methodTried: requested,
  };
}
