import { Type, type Static, type TSchema } from '@sinclair/typebox';
import {
  AmountInteger,
  AmountString,
  Asset,
  Component,
  DateTime,
  Nullable,
  StringEnum,
  Uuid,
  VALIDATED_IN_CODE,
} from './common.ts';
import { Metadata, MetadataInput } from './metadata.ts';

const Side = (what: string) =>
  Type.Object(
    {
      asset: Asset,
      amount: Type.Optional(AmountInteger(`${what}, integer minor units of \`asset\``)),
    },
    { description: `{asset, amount}: ${what}` },
  );

const QuoteFields = Type.Object({
  deliver: Type.Optional(
    Side('What the beneficiary receives. Fix `deliver.amount` (BS) for an exact delivered amount'),
  ),
  spend: Type.Optional(Side('What you pay, fee included. Fix `spend.amount` together with `deliver.asset` to convert')),
  customerId: Type.Optional(
    Uuid(
      'Your own user, for traceability and per-user limits: a payout on this quote is for this user (it may repeat it, not name another)',
    ),
  ),
  metadata: Type.Optional(
    MetadataInput('Returned on every read of the quote; a payout does not inherit it (send the payout its own).'),
  ),
});

const OnlyBs = StringEnum(['BS'] as const, { description: 'Bolivares: the only asset delivered' });

const DeliverFixed = Type.Object(
  {
    deliver: Type.Object({
      asset: OnlyBs,
      amount: AmountInteger('What the beneficiary receives exactly, BS minor units'),
    }),
    spend: Type.Optional(
      Type.Object({ asset: OnlyBs }, { description: 'What you pay in: BS (no amount; the fee is added on top)' }),
    ),
  },
  {
    title: 'DeliverFixedQuote',
    description: 'Deliver mode (recommended): `deliver: {asset: "BS", amount}`; `spend`, if sent, is `{asset: "BS"}`',
  },
);

const SpendFixed = Type.Object(
  {
    spend: Type.Object({
      asset: StringEnum(['USD', 'USDC', 'VESC'] as const, { description: 'What you pay in: any asset but BS' }),
      amount: AmountInteger('What you pay, fee included, minor units of `spend.asset`'),
    }),
    deliver: Type.Object({ asset: OnlyBs }, { description: 'What it converts to: BS (no amount)' }),
  },
  {
    title: 'SpendFixedQuote',
    description: 'Spend mode: `spend: {asset, amount}` in another asset than BS, with `deliver: {asset: "BS"}`',
  },
);

/** A branch of the body's `oneOf`: the modes constrain `deliver` and `spend`; the other fields are the body's own. */
const mode = <T extends TSchema>(schema: T) => {
  const { type: _object, ...branch } = schema as T & { type?: string };
  return branch;
};

/**
 * The quote request: the fields, and exactly one of the two modes (`oneOf`), which the quote rules
 * check (domain/quote-request.ts) so that a violation is answered rule by rule, saying what to send
 * instead. Generated clients get the union: `{}` or a deliver amount paid in USD does not compile.
 */
export const CreateQuoteBody = Type.Unsafe<
  Static<typeof QuoteFields> & (Static<typeof DeliverFixed> | Static<typeof SpendFixed>)
>({
  ...QuoteFields,
  oneOf: [mode(DeliverFixed), mode(SpendFixed)],
  [VALIDATED_IN_CODE]: ['oneOf'],
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
    maxLength: 21,
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
