import { Type } from '@sinclair/typebox';
import {
  AmountInteger,
  AmountString,
  Component,
  CursorPage,
  DateTime,
  Nullable,
  PageQuery,
  StringEnum,
  Uuid,
} from './common.ts';
import { CreatePayoutBody, PAYMENT_STATUSES } from './payouts.ts';
import { ERROR_CODE_LIST } from '../../domain/errors.ts';

/** A batch item's own id: unique per tenant and mode for as long as keys are remembered. */
const BATCH_REFERENCE_LENGTH_MAX = 64;
const BATCH_REFERENCE_PATTERN = '^[A-Za-z0-9._:/#-]+$';

/**
 * The most items a batch schema accepts at all. The configured maximum (PAYOUT_BATCH_MAX_ITEMS) is
 * checked in code first, with an answer that says how to split; this only keeps the document bounded.
 */
const BATCH_ITEMS_SCHEMA_MAX = 10_000;

const { quoteId, ...payoutFields } = CreatePayoutBody.properties;

const BatchDeliver = Type.Object(
  {
    asset: StringEnum(['BS'] as const, { description: 'Bolivares: the only asset delivered' }),
    amount: AmountInteger('What the beneficiary receives exactly, BS minor units'),
  },
  {
    description:
      'Quote the item at submission in deliver mode, with your fee, as `POST /v1/quotes` would: send this or `quoteId`',
  },
);

const PayoutBatchItemBody = Type.Object(
  {
    reference: Type.String({
      minLength: 1,
      maxLength: BATCH_REFERENCE_LENGTH_MAX,
      pattern: BATCH_REFERENCE_PATTERN,
      description:
        'Your id for this payout (a payroll line, an order): 1 to 64 of `A-Z a-z 0-9 . _ : / # -`, unique per mode for 24 h. A payout is made at most once per reference: an item whose reference already paid is answered with that payment, in any batch',
      example: 'payroll-2026-11/emp-0042',
      'x-error-message': 'must be 1 to 64 characters of A-Z a-z 0-9 . _ : / # -',
    }),
    quoteId: Type.Optional({
      ...quoteId,
      description: 'A quote you made (any mode of quote). Send this or `deliver`, not both',
    }),
    deliver: Type.Optional(BatchDeliver),
    ...payoutFields,
  },
  {
    description:
      'One payout: the body of `POST /v1/payouts`, with `deliver` instead of `quoteId` if you like, and its `reference`',
  },
);

export const CreatePayoutBatchBody = Type.Object({
  items: Type.Array(PayoutBatchItemBody, {
    minItems: 1,
    maxItems: BATCH_ITEMS_SCHEMA_MAX,
    description:
      'The payouts, in the order they are decided (each against the balance and limits the items before it left). At most `PAYOUT_BATCH_MAX_ITEMS` (1,000 by default)',
  }),
});

const PAYOUT_BATCH_STATUSES = ['receiving', 'processing', 'completed'] as const;
const BATCH_ITEM_STATUSES = [...PAYMENT_STATUSES, 'refused'] as const;

const Counts = Type.Object(
  Object.fromEntries(
    BATCH_ITEM_STATUSES.map((s) => [
      s,
      Type.Integer({
        minimum: 0,
        description: `Items ${s === 'refused' ? 'refused (no payment)' : `whose payment is ${s}`}`,
      }),
    ]),
  ),
  { description: 'Items by status: a payment status, or `refused`' },
);
const Totals = Type.Object(
  Object.fromEntries(
    BATCH_ITEM_STATUSES.map((s) => [
      s,
      AmountString(
        `BS minor units delivered${s === 'refused' ? ' by refused items had they been paid (their quoted amount; 0 when unknown)' : ` by the items whose payment is ${s}`}`,
      ),
    ]),
  ),
  { description: 'Delivered amounts (BS minor units) by status' },
);

const PayoutBatchItemResult = Type.Object({
  index: Type.Integer({ minimum: 0, description: 'Position of the item in the request, from 0' }),
  reference: Type.String({ description: "The item's reference, as sent" }),
  status: StringEnum(BATCH_ITEM_STATUSES, {
    description:
      "Its payment's status as it stands now, or `refused`: no payment, as a single payout answered by an HTTP error",
  }),
  paymentId: Nullable(Uuid('The payment; null when refused')),
  reason: Nullable(
    Type.String({ description: "Why the payment failed (`failed`), as a payout's `reason`; else null" }),
  ),
  amount: Nullable(
    AmountString(
      'BS minor units the payment delivers, or that a refused item asked to deliver (null when its quote is unknown)',
    ),
  ),
  error: Nullable(
    Type.Object(
      {
        code: StringEnum(ERROR_CODE_LIST, { description: 'The error code a single payout would have answered' }),
        message: Type.String(),
        meta: Type.Optional(Type.Object({}, { additionalProperties: true })),
      },
      { description: 'Only on `refused`: the error a single `POST /v1/payouts` would have answered' },
    ),
  ),
});

const BatchSummaryFields = {
  id: Uuid('The batch'),
  status: StringEnum(PAYOUT_BATCH_STATUSES, {
    description:
      '`receiving`: its items are being recorded (a request that stopped midway leaves it so until retried with the same key); `processing`: every item recorded, some payments not final; `completed`: every payment final (`settled`, `failed`, `returned` or `reversed`) or refused',
  }),
  itemCount: Type.Integer({ minimum: 1, description: 'Items in the request' }),
  counts: Counts,
  totals: Totals,
  createdAt: DateTime(),
  completedAt: Nullable(DateTime('When the last payment became final; null until then')),
};

const PayoutBatchSummary = Component(
  'PayoutBatchSummary',
  Type.Object(BatchSummaryFields, { description: 'A payout batch, without its items' }),
);

export const PayoutBatch = Component(
  'PayoutBatch',
  Type.Object(
    {
      ...BatchSummaryFields,
      items: Type.Array(PayoutBatchItemResult, { description: 'One result per item, in item order' }),
    },
    { description: "A payout batch: its counts and totals by status and every item's result" },
  ),
);

export const PayoutBatchPage = CursorPage('PayoutBatchPage', PayoutBatchSummary, 'Payout batches, newest first');

export const PayoutBatchListQuery = Type.Object(PageQuery);
export const PayoutBatchParams = Type.Object({ id: Uuid('The batch') });
