import { Type } from '@sinclair/typebox';
import { Instrument, PayoutAnswerSchema } from '../../contract/payout-answer.ts';
import type { TransitionActor } from '../../domain/payment-state.ts';
import type { AccountKind, LedgerEntryKind } from '../../domain/ledger.ts';
import { EMAIL_LENGTH_MAX, NAME_LENGTH_MAX, NAME_LENGTH_MIN, VENEZUELAN_MOBILE_PREFIXES } from '../../domain/sender.ts';
import {
  AmountInteger,
  AmountString,
  Asset,
  Component,
  DateTime,
  lengthCheckedInCode,
  ModeSchema,
  Nullable,
  StringEnum,
  Uuid,
  VALIDATED_IN_CODE,
} from './common.ts';
import { RegisterBeneficiaryBody } from './beneficiaries.ts';
import { Metadata, MetadataInput } from './metadata.ts';
import { INSTRUMENTS } from '../../domain/instrument.ts';

import { PAYMENT_STATUSES } from '../../domain/payment-state.ts';

export { PAYMENT_STATUSES };

const NAME_RULE = `${NAME_LENGTH_MIN} to ${NAME_LENGTH_MAX} characters (surrounding spaces do not count)`;

/** A phone in the accepted forms (`+58 (414) 123-45-67` is 19 characters): room for the separators. */
const SENDER_PHONE_LENGTH_MAX = 32;

/**
 * The originator. Every field but `nationality` is required and each has a format and a longest
 * value; the sender rules check them (domain/sender.ts, `x-validated-in-code`) so that every
 * violation is reported at once with the expected format and an example. The schema itself checks
 * the JSON types.
 * @internal Exported for its tests, not used elsewhere.
 */
export const SenderBlock = Type.Object(
  {
    nationalId: Type.String({
      ...lengthCheckedInCode(20),
      description:
        'For a Venezuelan sender (nationality absent or VEN): V, E or J followed by 4 to 9 digits, upper case. For a foreign sender: 5 to 20 letters and digits as issued by the country of nationality',
      example: 'V12345678',
    }),
    nationality: Type.Optional(
      Type.String({
        ...lengthCheckedInCode(3),
        description:
          'an assigned ISO 3166-1 alpha-3 country code (any case), e.g. COL; absent = VEN. Decides which nationalId format applies',
        example: 'VEN',
      }),
    ),
    firstName: Type.String({ ...lengthCheckedInCode(NAME_LENGTH_MAX), description: NAME_RULE, example: 'María' }),
    lastName: Type.String({ ...lengthCheckedInCode(NAME_LENGTH_MAX), description: NAME_RULE, example: 'Pérez' }),
    phone: Type.String({
      ...lengthCheckedInCode(SENDER_PHONE_LENGTH_MAX),
      description: `Venezuelan mobile (${VENEZUELAN_MOBILE_PREFIXES.join(', ')}) as 04XXXXXXXXX, +584XXXXXXXXX or 4XXXXXXXXX; spaces, dashes and parentheses are ignored. Stored as 04XXXXXXXXX`,
      example: '04141234567',
    }),
    email: Type.String({
      ...lengthCheckedInCode(EMAIL_LENGTH_MAX),
      description: `Email address, local@domain.tld, at most ${EMAIL_LENGTH_MAX} characters`,
      example: 'maria.perez@example.com',
    }),
  },
  { description: 'The originator: every field but `nationality` is required', [VALIDATED_IN_CODE]: ['required'] },
);

export const CreatePayoutBody = Type.Object({
  quoteId: Uuid('The quote fixing the amount, rate and fee. No amount is sent in this call'),
  method: StringEnum(INSTRUMENTS, { description: 'Instrument requested' }),
  methodPolicy: Type.Optional(
    StringEnum(['preferred', 'strict'] as const, {
      description:
        '`preferred` (default): may deliver through the other instrument, reported by `methodChanged`. `strict`: only the requested one',
    }),
  ),
  beneficiaryId: Type.Optional(Uuid('A registered beneficiary (or send `beneficiary` inline)')),
  beneficiary: Type.Optional(
    Type.Unsafe({
      ...RegisterBeneficiaryBody,
      description: 'Inline beneficiary, same rules as POST /v1/beneficiaries; registered or reused',
    }),
  ),
  customerId: Type.Optional(
    Uuid(
      "Your own user, for traceability and per-user limits; with a sender block the sender is stored for this user. Absent: the quote's customerId, if it was made with one; another user than the quote's is refused (400)",
    ),
  ),
  sender: Type.Optional(SenderBlock),
  metadata: Type.Optional(
    MetadataInput(
      "The payout's: returned in its answer (replays included), by `GET /v1/payments/{id}` and the statement, and in the `payload` of its webhook events. Part of the request under the `Idempotency-Key`: the same key with other metadata is 409 `idempotency_key_reused`. The inline `beneficiary` takes its own `metadata`.",
    ),
  ),
});

export const PayoutResult = Component('PayoutResult', PayoutAnswerSchema);

const PaymentStatus = (description: string) => StringEnum(PAYMENT_STATUSES, { description });

const TRANSITION_ACTORS = ['api', 'provider_event', 'reaper', 'system'] as const satisfies readonly TransitionActor[];

const KNOWN_TRANSITION_REASONS = [
  '`ledger_committed` (accepted and charged)',
  '`awaiting_rail` (accepted and charged, waiting for a rail: to pending)',
  '`rail_admitted` (a rail admitted a waiting payment: pending to submitted)',
  '`rail_accepted_async` (the rail took it and settles later)',
  '`rail_settled`, `resolved_by_reaper` or `simulated_settlement` (to settled)',
  '`rail_unconfirmed`, `rail_timeout` or `rail_error` (to unknown)',
  'a failure reason (to failed, as `reason` of the payout answer)',
  "the rail's reversal reason (to reversed; `returned_by_bank` in the sandbox)",
];

const Transition = Type.Object({
  from_status: Nullable(
    PaymentStatus(
      'The status before; null on the first transition (a payment created `submitted`, `pending` or `failed`)',
    ),
  ),
  to_status: PaymentStatus('The status after'),
  reason: Nullable(
    Type.String({
      description: `Why the payment moved. An open set: ${KNOWN_TRANSITION_REASONS.join('; ')}. A live rail may report reversal reasons of its own`,
      example: 'ledger_committed',
    }),
  ),
  actor: StringEnum(TRANSITION_ACTORS, {
    description:
      '`api`: the payout call; `provider_event`: a notification from the rail; `reaper`: the worker that asks the rail about unresolved payments; `system`: the service itself (a sandbox simulation)',
  }),
  metadata: Type.Object(
    {},
    { additionalProperties: true, description: 'For disbursements: methodRequested, methodUsed' },
  ),
  created_at: DateTime(),
});

export const StatementRowFields = {
  id: Uuid(),
  customer_id: Nullable(Uuid()),
  beneficiary_id: Nullable(Uuid()),
  status: StringEnum(PAYMENT_STATUSES),
  status_reason: Nullable(
    Type.String({
      description:
        "Why the payment is in its status: on `failed` a failure reason (see `PayoutResult.reason`), on `reversed` the rail's reversal reason, on `unknown` why it is unconfirmed, on `settled` how it settled, on `pending` `awaiting_rail` (no rail could take it yet); null on `submitted`. An open set, as the transitions' `reason`",
    }),
  ),
  source_asset: Asset,
  source_amount: AmountString(),
  payout_asset: Asset,
  payout_amount: AmountString('What the beneficiary received'),
  fee_amount: AmountString('0 on failed'),
  method: Nullable(Instrument),
  bank_reference: Nullable(Type.String({ description: 'The only send identifier published' })),
  settled_at: Nullable(DateTime('When money actually left; the date `from`/`to` filter on')),
  created_at: DateTime(),
  metadata: Metadata,
  batch_id: Type.Optional(
    Uuid('The payout batch that created the payment; absent on a payment made by `POST /v1/payouts`'),
  ),
};

export const PaymentFields = {
  ...StatementRowFields,
  quote_id: Nullable(Uuid()),
  compensated: Type.Boolean({ description: 'true if the ledger entry was reversed' }),
  updated_at: DateTime(),
  events: Type.Array(Transition, { description: 'Transition history, oldest first' }),
};

export const Payment = Component('Payment', Type.Object(PaymentFields));

const LEDGER_ENTRY_KINDS = [
  'funding',
  'payout',
  'payout_settlement',
  'payout_failure',
  'payout_reversal',
  'daily_close',
] as const satisfies readonly LedgerEntryKind[];
const LEDGER_ACCOUNTS = [
  'prefunding',
  'credit_receivable',
  'in_flight',
  'revenue',
  'treasury',
  'fx',
] as const satisfies readonly AccountKind[];

export const LedgerEntryView = Component(
  'LedgerEntry',
  Type.Object(
    {
      id: Uuid('Ledger transaction id'),
      kind: StringEnum(LEDGER_ENTRY_KINDS, {
        description:
          '`payout`: the charge when the payout was accepted; `payout_settlement`: the rail paid (in flight cleared); `payout_failure`: the charge given back; `payout_reversal`: a settled payout returned by the bank',
      }),
      created_at: DateTime(),
      postings: Type.Array(
        Type.Object({
          asset: Asset,
          account: StringEnum(LEDGER_ACCOUNTS, { description: 'The account of the program the posting moves' }),
          amount: Type.String({
            pattern: '^-?[0-9]+$',
            description:
              'Signed minor units: a debit is positive, a credit negative; the postings of an entry sum to zero per asset',
            example: '-5000000',
          }),
        }),
        { description: 'By asset, then account' },
      ),
    },
    { description: 'One balanced ledger entry' },
  ),
);

export const PaymentLedger = Component(
  'PaymentLedger',
  Type.Object(
    { data: Type.Array(LedgerEntryView, { description: "The payment's entries in the order they were written" }) },
    { description: "A payment's ledger entries" },
  ),
);

const TreasuryPositionFields = {
  tenantId: Uuid(),
  asset: Type.String({ description: 'Asset code' }),
  prefundingBalance: AmountString(
    'Available to disburse. Under daily close normally 0 (not an alarm); when positive, it is money owed to the tenant (a payout that failed or was returned after a close), netted by the next close',
  ),
  platformRevenueFromTenant: AmountString(
    'Fees charged to the tenant for payouts that did not fail (a failed payout charges no fee; a reversed one keeps its fee)',
  ),
  creditEnabled: Type.Boolean({ description: 'true = daily close, no balance blocking; false = prefunded' }),
  creditDrawn: AmountString('Owed now, settled at the daily close; 0 when prefunded'),
  creditLimit: Nullable(
    AmountString("This asset's agreed ceiling (BS: the tenant's creditLimit; others: creditLimits); null if none"),
  ),
  creditAvailable: Nullable(AmountString('Remaining line; null if no ceiling')),
};

export const TreasuryPosition = Component('TreasuryPosition', Type.Object(TreasuryPositionFields));

export const AssetQuery = Type.Object({
  asset: Type.Optional(StringEnum(['BS', 'USD', 'USDC', 'VESC'] as const, { default: 'BS' })),
});

export const FundingBody = Type.Object({
  mode: ModeSchema,
  asset: Asset,
  amount: AmountInteger('Amount credited to the prefunding balance, minor units'),
});

export const ModeBody = Type.Object({ mode: ModeSchema });

export const SenderBody = Type.Object({ mode: ModeSchema, sender: SenderBlock });

export const ClosedPosition = Component(
  'ClosedPosition',
  Type.Object({
    ...TreasuryPositionFields,
    closedAmount: AmountString('BS credit drawn settled by this close'),
    closed: Type.Array(
      Type.Object({
        asset: Type.String({ description: 'Asset code' }),
        drawn: AmountString('Credit drawn settled'),
        owed: AmountString('What the tenant was owed (refunds after the previous close), netted'),
      }),
      { description: 'Every asset this close settled' },
    ),
  }),
);

export const StoredSender = Component(
  'StoredSender',
  Type.Object({
    mode: ModeSchema,
    sender: Type.Object({
      nationalId: Type.String(),
      nationality: Type.String(),
      firstName: Type.String(),
      lastName: Type.String(),
      phone: Type.String(),
      email: Type.String(),
    }),
  }),
);
