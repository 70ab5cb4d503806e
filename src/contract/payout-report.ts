// GET /v1/reports/payouts: its query and its answer. Below services/, so that the report's use case
// (services/payout-report.ts) returns the very type the route serves and the document describes.
import { Type, type Static } from '@sinclair/typebox';
import { PAYMENT_STATUSES } from '../domain/payment-state.ts';
import { REPORT_DAYS_MAX, REPORT_GRANULARITIES } from '../domain/payout-report.ts';
import { AmountString, Component, DateTime, ModeSchema, Nullable, StringEnum, Uuid } from './schema.ts';

const CalendarDay = (description: string) =>
  Type.String({
    format: 'date',
    maxLength: 10,
    description,
    example: '2026-03-01',
    'x-error-message': 'must be a calendar date YYYY-MM-DD, such as 2026-03-01',
  });

export const PayoutReportQuery = Type.Object({
  from: CalendarDay('First day of the report, inclusive: a calendar day in America/Caracas (00:00 Caracas time)'),
  to: CalendarDay('Last day of the report, inclusive, in America/Caracas'),
  granularity: Type.Optional(
    StringEnum(REPORT_GRANULARITIES, {
      default: 'day',
      description: `Bucket size: \`hour\` (ranges of up to ${REPORT_DAYS_MAX.hour} days) or \`day\` (Caracas calendar days, up to ${REPORT_DAYS_MAX.day} days)`,
    }),
  ),
  tenantId: Type.Optional(
    Uuid('Platform key only: one tenant. Without it the platform key reports on every tenant together'),
  ),
  mode: Type.Optional(
    StringEnum(['test', 'live'] as const, {
      description:
        "Platform key only, and required with it: the mode to report on. A tenant key reports on its own key's mode",
    }),
  ),
});

const Count = (description: string) => Type.Integer({ format: 'int64', minimum: 0, description });
const Milliseconds = (description: string) => Nullable(Type.Integer({ format: 'int64', minimum: 0, description }));

const StatusTally = Type.Object(
  {
    count: Count('Payments in this status'),
    amount: AmountString('Sum of their `payoutAmount` (BS minor units)'),
  },
  { additionalProperties: false },
);

/** One entry per payment status, zero when none: a chart never has to guess a missing series. */
const ByStatus = Component(
  'ReportStatusTallies',
  Type.Object(
    Object.fromEntries(PAYMENT_STATUSES.map((status) => [status, StatusTally])) as Record<
      (typeof PAYMENT_STATUSES)[number],
      typeof StatusTally
    >,
    {
      description: 'Payments by their status now, with their payout amounts',
      additionalProperties: false,
    },
  ),
);

const TimeToOutcome = Type.Object(
  {
    count: Count('Payments of the bucket with a final outcome (settled, failed, returned or reversed)'),
    p50Ms: Milliseconds(
      'Median time from creation to the outcome (nearest rank), in milliseconds, as the last millisecond of its histogram bin: at most 12.5 % above the exact value, exact below 16 ms; null when count is 0',
    ),
    p95Ms: Milliseconds('95th percentile of that time, given to its histogram bin as p50Ms is; null when count is 0'),
  },
  {
    description:
      'Time from creation to the outcome: to `settled_at` for payments that settled (a later return or reversal does not count), to the failure for failed ones',
  },
);

const WebhookTally = Type.Object(
  {
    delivered: Count('Attempts the endpoint answered 2xx'),
    rejected: Count('Attempts the endpoint answered with another status'),
    unreachable: Count('Attempts with no HTTP answer: timeout, refused connection, no endpoint configured'),
    p50Ms: Milliseconds(
      'Median attempt duration (nearest rank), in milliseconds, as the last millisecond of its histogram bin: at most 12.5 % above the exact value, exact below 16 ms; null when there was no attempt',
    ),
    p95Ms: Milliseconds(
      '95th percentile attempt duration, given to its histogram bin as p50Ms is; null when there was no attempt',
    ),
  },
  {
    description:
      'Webhook delivery attempts made in the bucket (each retry is an attempt), by outcome, and how long they took',
  },
);

const BalanceAt = Component(
  'ReportBalance',
  Type.Object(
    {
      asset: Type.String({ maxLength: 8, description: 'Asset code (BS, USD, USDC, VESC)' }),
      prefundingBalance: Nullable(
        AmountString(
          "Prefunded money held for the tenant at the bucket's end; null before the first ledger entry that recorded it",
        ),
      ),
      creditDrawn: Nullable(
        AmountString(
          "Credit drawn and not yet settled at the bucket's end; null before the first ledger entry that recorded it",
        ),
      ),
    },
    { additionalProperties: false },
  ),
);

const Bucket = Component(
  'ReportBucket',
  Type.Object(
    {
      start: DateTime('Start of the bucket, inclusive'),
      end: DateTime('End of the bucket, exclusive'),
      count: Count('Payments created in the bucket'),
      deliveredAmount: AmountString("`payoutAmount` of the bucket's payments that are `settled` now"),
      byStatus: ByStatus,
      timeToOutcome: TimeToOutcome,
      webhooks: WebhookTally,
      balances: Type.Array(BalanceAt, {
        description:
          "The treasury at the bucket's end (at the report's time for the bucket under way; null amounts for buckets not begun), one per asset the tenant holds",
      }),
    },
    { additionalProperties: false },
  ),
);

const OutcomeTally = {
  count: Count('Payments created in the range'),
  settled: Count('Of which `settled` now'),
  failed: Count('Of which `failed`'),
  returned: Count('Of which `returned`'),
  reversed: Count('Of which `reversed`'),
  inFlight: Count('Of which with no outcome yet (`created`, `pending`, `submitted`, `unknown`)'),
  successRate: Nullable(
    Type.Number({
      minimum: 0,
      maximum: 1,
      description:
        'settled ÷ (settled + failed + returned + reversed), to 4 decimals; null when none has an outcome yet',
    }),
  ),
};

const BankTally = Component(
  'ReportBank',
  Type.Object(
    {
      bankCode: Type.String({ description: "The beneficiary bank's 4-digit code" }),
      bankName: Nullable(
        Type.String({ description: 'Its name in the bank catalogue; null for a code the catalogue does not list' }),
      ),
      ...OutcomeTally,
    },
    { additionalProperties: false },
  ),
);

const InstrumentTally = Component(
  'ReportInstrument',
  Type.Object(
    {
      method: Nullable(
        StringEnum(['pago_movil', 'transferencia'] as const, {
          description: 'The instrument the payment went by; null for payments that failed before one was chosen',
        }),
      ),
      ...OutcomeTally,
    },
    { additionalProperties: false },
  ),
);

const FailureReason = Component(
  'ReportFailureReason',
  Type.Object(
    {
      status: StringEnum(['failed', 'returned', 'reversed'] as const),
      reason: Nullable(Type.String({ description: 'The `reason` of the payment (`status_reason`)' })),
      count: Count('Payments created in the range with this status and reason'),
      amount: AmountString('Sum of their `payoutAmount`'),
    },
    { additionalProperties: false },
  ),
);

export const PayoutReport = Component(
  'PayoutReport',
  Type.Object(
    {
      tenantId: Nullable(Uuid("The tenant reported on; null for the platform key's report on every tenant")),
      mode: ModeSchema,
      granularity: StringEnum(REPORT_GRANULARITIES),
      from: Type.String({ format: 'date', description: 'First Caracas day, inclusive' }),
      to: Type.String({ format: 'date', description: 'Last Caracas day, inclusive' }),
      timeZone: Type.Literal('America/Caracas'),
      start: DateTime('Start of the range: 00:00 Caracas time on `from`'),
      end: DateTime('End of the range, exclusive: 00:00 Caracas time on the day after `to`'),
      generatedAt: DateTime('When the report was computed: buckets after it are empty'),
      totals: Type.Object(
        {
          count: Count('Payments created in the range'),
          deliveredAmount: AmountString('`payoutAmount` of those `settled` now'),
          byStatus: ByStatus,
        },
        { additionalProperties: false },
      ),
      buckets: Type.Array(Bucket, { description: 'Every bucket of the range in time order, empty ones included' }),
      banks: Type.Array(BankTally, {
        description: 'Payments created in the range by beneficiary bank, most payments first',
      }),
      instruments: Type.Array(InstrumentTally, {
        description: 'Payments created in the range by instrument, most payments first',
      }),
      failureReasons: Type.Array(FailureReason, {
        description: 'Failed, returned and reversed payments created in the range by reason, most first',
      }),
    },
    {
      additionalProperties: false,
      description: 'Payouts over a time range: what a payments operator checks first each morning',
    },
  ),
);

/** A report's query, as the route validated it. */
export type PayoutReportRequest = Static<typeof PayoutReportQuery>;

/** A report, as the route serves it. */
export type PayoutReport = Static<typeof PayoutReport>;
