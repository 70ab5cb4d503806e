import { Type } from '@sinclair/typebox';
import { AmountInteger, AmountString, Asset, Component, DateTime, Nullable, StringEnum, Uuid } from './common.ts';
import { Metadata, MetadataInput } from './metadata.ts';

const Side = (what: string) =>
  Type.Object(
    {
      asset: Asset,
      amount: Type.Optional(AmountInteger(`${what}, integer minor units of \`asset\``)),
    },
    { description: `{asset, amount}: ${what}` },
  );

export const CreateQuoteBody = Type.Object({
  deliver: Type.Optional(Side('What the beneficiary receives. Fix `deliver.amount` (BS) for an exact delivered amount')),
  spend: Type.Optional(Side('What you pay, fee included. Fix `spend.amount` together with `deliver.asset` to convert')),
  customerId: Type.Optional(Uuid('Your own user, for traceability and per-user limits')),
  metadata: Type.Optional(MetadataInput('Returned on every read of the quote; a payout does not inherit it (send the payout its own).')),
});

const Money = Type.Object({ asset: Asset, amount: AmountString() });

export const Quote = Component(
  'Quote',
  Type.Object({
    id: Uuid('Send it as `quoteId` when disbursing'),
    fixed: StringEnum(['deliver', 'spend'] as const, { description: 'Which side the caller fixed' }),
    spend: Type.Unsafe({ ...Money, description: 'What is charged to you, fee included' }),
    deliver: Type.Unsafe({ ...Money, description: 'What the beneficiary receives' }),
    fee: Type.Unsafe({ ...Money, description: 'Service fee, always in the delivered asset (BS)' }),
    rate: Nullable(
      Type.Object(
        {
          value: Type.String({ description: 'Rate applied to you, margin included (BS per unit)', example: '920.375' }),
          market: Type.String({ description: 'Reference rate before margin', example: '925.00' }),
          spread_bps: Type.Integer({ description: 'Margin in basis points (50 = 0.50 %)' }),
        },
        { description: 'null when there is no conversion (BS on both sides)' },
      ),
    ),
    status: StringEnum(['open', 'consumed', 'expired'] as const, {
      description: '`open` until a payout uses it (`consumed`) or `expires_at` passes (`expired`)',
    }),
    expires_at: DateTime('The quote is guaranteed until then'),
    created_at: DateTime(),
    metadata: Metadata,
  }),
);

export const RateAssetParam = Type.Object({
  asset: StringEnum(['USD', 'USDC', 'VESC'] as const, { description: 'Asset priced in BS' }),
});

export const SetRateBody = Type.Object({
  market: Type.String({
    pattern: '^[0-9]{1,12}(\\.[0-9]{1,8})?$',
    description: 'Market rate in BS per 1 unit of the asset, as a decimal string',
    example: '925.00',
    'x-error-message': 'must be a positive decimal string such as "925.00" (at most 8 decimals)',
  }),
});

export const StoredRate = Component(
  'StoredRate',
  Type.Object({
    asset: Type.String(),
    market: Type.String({ example: '925.00' }),
    updatedAt: DateTime(),
  }),
);
