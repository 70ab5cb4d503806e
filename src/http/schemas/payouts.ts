import { Type } from '@sinclair/typebox';
import { AmountInteger, AmountString, Asset, Component, DateTime, ModeSchema, Nullable, StringEnum, Uuid } from './common.ts';
import { RegisterBeneficiaryBody } from './beneficiaries.ts';
import { Metadata, MetadataInput } from './metadata.ts';

export const INSTRUMENTS = ['pago_movil', 'transferencia'] as const;
export const PAYMENT_STATUSES = ['created', 'pending', 'submitted', 'unknown', 'settled', 'failed', 'returned', 'reversed'] as const;
const Instrument = StringEnum(INSTRUMENTS);

// Field types only: the formats (nationality, id per nationality, phone forms) are checked by
// validateSender so that every violation is reported at once with the expected format.
export const SenderBlock = Type.Object(
  {
    nationalId: Type.Optional(Type.String({ description: 'Venezuelan: V, E or J + up to 9 digits. Foreign: 5 to 20 letters and digits', example: 'V12345678' })),
    nationality: Type.Optional(Type.String({ description: 'ISO 3166-1 alpha-3; absent = VEN', example: 'VEN' })),
    firstName: Type.Optional(Type.String({ description: 'At least 2 characters', example: 'Ana' })),
    lastName: Type.Optional(Type.String({ description: 'At least 2 characters', example: 'Rojas' })),
    phone: Type.Optional(Type.String({ description: 'Venezuelan mobile (0412, 0414, 0416, 0424, 0426): 04XXXXXXXXX, +58 4XXXXXXXXX or 4XXXXXXXXX', example: '04141234567' })),
    email: Type.Optional(Type.String({ description: 'Email address', example: 'ana@example.com' })),
  },
  { description: 'The originator. If sent, every field but nationality is required' },
);

export const CreatePayoutBody = Type.Object({
  quoteId: Uuid('The quote fixing the amount, rate and fee. No amount is sent in this call'),
  method: StringEnum(INSTRUMENTS, { description: 'Instrument requested' }),
  methodPolicy: Type.Optional(
    StringEnum(['preferred', 'strict'] as const, {
      description: '`preferred` (default): may deliver through the other instrument, reported by `methodChanged`. `strict`: only the requested one',
    }),
  ),
  beneficiaryId: Type.Optional(Uuid('A registered beneficiary (or send `beneficiary` inline)')),
  beneficiary: Type.Optional(Type.Unsafe({ ...RegisterBeneficiaryBody, description: 'Inline beneficiary, same rules as POST /v1/beneficiaries; registered or reused' })),
  customerId: Type.Optional(Uuid('Your own user, for traceability and per-user limits; with a sender block the sender is stored for this user')),
  sender: Type.Optional(SenderBlock),
  metadata: Type.Optional(
    MetadataInput(
      "The payout's: returned in its answer (replays included), by `GET /v1/payments/{id}` and the statement, and in the `payload` of its webhook events. Part of the request under the `Idempotency-Key`: the same key with other metadata is 409 `idempotency_key_reused`. The inline `beneficiary` takes its own `metadata`.",
    ),
  ),
});

export const PayoutResult = Component(
  'PayoutResult',
  Type.Object({
    id: Uuid('Payment id'),
    status: StringEnum(PAYMENT_STATUSES, { description: 'Usually `submitted`: the outcome arrives by webhook' }),
    bankReference: Nullable(Type.String({ description: 'Receipt the beneficiary sees at their bank; null until the rail settles' })),
    asset: Asset,
    amount: AmountString('Amount sent to the destination, minor units'),
    feeAmount: AmountString('Fee charged; "0" when failed'),
    totalDebited: Type.Optional(AmountString('amount + fee: what left the source balance; "0" when failed; absent when unknown')),
    method: StringEnum(INSTRUMENTS, { description: 'Instrument used; the requested one when the payout failed before any instrument was used' }),
    methodRequested: Instrument,
    methodChanged: Type.Boolean({ description: 'true if another instrument than requested was used' }),
    message: Nullable(Type.String()),
    reason: Nullable(Type.String({ description: 'Only with status failed' })),
    beneficiaryId: Uuid(),
    beneficiary: Type.Object({
      fullName: Type.String(),
      nationalId: Type.String(),
      bankCode: Type.String(),
      instrument: Instrument,
    }),
    metadata: Metadata,
  }),
);

export const Transition = Type.Object({
  from_status: Nullable(Type.String()),
  to_status: Type.String(),
  reason: Nullable(Type.String()),
  actor: StringEnum(['api', 'provider_event', 'reaper', 'system'] as const),
  metadata: Type.Object({}, { additionalProperties: true, description: 'For disbursements: methodRequested, methodUsed' }),
  created_at: DateTime(),
});

export const StatementRowFields = {
  id: Uuid(),
  customer_id: Nullable(Uuid()),
  beneficiary_id: Nullable(Uuid()),
  status: StringEnum(PAYMENT_STATUSES),
  status_reason: Nullable(Type.String({ description: "On failed, the rail's reason" })),
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
};

export const Payment = Component(
  'Payment',
  Type.Object({
    ...StatementRowFields,
    quote_id: Nullable(Uuid()),
    compensated: Type.Boolean({ description: 'true if the ledger entry was reversed' }),
    updated_at: DateTime(),
    events: Type.Array(Transition, { description: 'Transition history, oldest first' }),
  }),
);

const TreasuryPositionFields = {
    tenantId: Type.String(),
    asset: Type.String(),
    prefundingBalance: AmountString(
      'Available to disburse. Under daily close normally 0 (not an alarm); when positive, it is money owed to the tenant (a payout that failed or was returned after a close), netted by the next close',
    ),
    platformRevenueFromTenant: AmountString('Fees charged to the tenant for payouts that did not fail (a failed payout charges no fee; a reversed one keeps its fee)'),
    creditEnabled: Type.Boolean({ description: 'true = daily close, no balance blocking; false = prefunded' }),
    creditDrawn: AmountString('Owed now, settled at the daily close; 0 when prefunded'),
    creditLimit: Nullable(AmountString("This asset's agreed ceiling (BS: the tenant's creditLimit; others: creditLimits); null if none")),
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
        asset: Type.String(),
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
