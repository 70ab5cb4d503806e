// The answer of POST /v1/payouts (and of each accepted item of a payout batch): its schema and its
// type, one definition. Below services/, so that the payout path builds the very type the route
// serves and the document describes (services/payout-answer.ts), and stores its bytes under the key.
// The route registers it as the `PayoutResult` component (http/schemas/payouts.ts).
import { Type, type Static } from '@sinclair/typebox';
import { ACCOUNT_CHECKS, NATIONAL_ID_CHECKS } from '../domain/account-check.ts';
import { INSTRUMENTS } from '../domain/instrument.ts';
import type { Metadata as MetadataValue } from '../domain/metadata.ts';
import { PAYOUT_FAILURE_REASONS } from '../domain/payment-messages.ts';
import { PAYMENT_STATUSES } from '../domain/payment-state.ts';
import { AmountString, Asset, Nullable, StringEnum, Uuid } from './schema.ts';

export const Instrument = StringEnum(INSTRUMENTS);

export const AccountCheckField = StringEnum(ACCOUNT_CHECKS, {
  description:
    'The two check digits of a 20-digit `account_number` (`EEEE OOOO DD CCCCCCCCCC`): `valid` when both agree with the entity, office and account digits, `invalid_check_digits` when either does not (a mistyped number the bank would reject), `not_checked` when there is no account number (Pago Móvil) or it is shorter than 20 digits',
});

export const NationalIdCheckField = StringEnum(NATIONAL_ID_CHECKS, {
  description:
    'The check digit of a RIF `national_id` (`J` or `G` followed by 9 digits, the last one the check digit): `valid` when it agrees with the letter and the first 8 digits, `invalid_check_digit` when it does not (a mistyped RIF), `not_checked` for any other id (a cédula or a passport carries no check digit)',
});

/** The `Metadata` component (registered by http/schemas/metadata.ts), by reference. */
const MetadataRef = Type.Unsafe<MetadataValue>(Type.Ref('Metadata'));

export const PayoutAnswerSchema = Type.Object({
  id: Uuid('Payment id'),
  status: StringEnum(PAYMENT_STATUSES, {
    description:
      'Usually `submitted`: the outcome arrives by webhook. `pending` when no rail can take it right now (its bank connection is down): accepted and charged, it is sent as soon as a rail admits it, or fails `bank_unreachable` after the rail queue bound (`message` says so)',
  }),
  bankReference: Nullable(
    Type.String({ description: 'Receipt the beneficiary sees at their bank; null until the rail settles' }),
  ),
  asset: Asset,
  amount: AmountString('Amount sent to the destination, minor units'),
  feeAmount: AmountString('Fee charged; "0" when failed'),
  totalDebited: Type.Optional(
    AmountString('amount + fee: what left the source balance; "0" when failed; absent when unknown'),
  ),
  method: StringEnum(INSTRUMENTS, {
    description: 'Instrument used; the requested one when the payout failed before any instrument was used',
  }),
  methodRequested: Instrument,
  methodChanged: Type.Boolean({ description: 'true if another instrument than requested was used' }),
  message: Nullable(Type.String()),
  reason: Nullable(
    StringEnum(PAYOUT_FAILURE_REASONS, { description: 'Why it failed; only with status `failed`, else null' }),
  ),
  beneficiaryId: Uuid(),
  beneficiary: Type.Object({
    fullName: Type.String(),
    nationalId: Type.String(),
    bankCode: Type.String(),
    instrument: Instrument,
    accountCheck: AccountCheckField,
    nationalIdCheck: NationalIdCheckField,
  }),
  metadata: MetadataRef,
});

export type PayoutAnswer = Static<typeof PayoutAnswerSchema>;
