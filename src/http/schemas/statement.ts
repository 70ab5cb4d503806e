import { Type } from '@sinclair/typebox';
import { METADATA_KEY_LENGTH_MAX, METADATA_VALUE_LENGTH_MAX } from '../../domain/metadata.ts';
import { Component, CursorPage, PageQuery, StringEnum, Uuid } from './common.ts';
import { PAYMENT_STATUSES, StatementRowFields } from './payouts.ts';

const CalendarDate = (description: string) =>
  Type.String({
    format: 'date',
    maxLength: 10,
    description,
    example: '2026-03-01',
    'x-error-message': 'must be a calendar date YYYY-MM-DD, such as 2026-03-01',
  });

/** The filters shared by the statement and its export. */
const StatementFilters = {
  from: Type.Optional(
    CalendarDate(
      'First day, inclusive, on which the payments settled (`settled_at`), as a calendar day in America/Caracas. Payments not settled are then excluded',
    ),
  ),
  to: Type.Optional(
    CalendarDate(
      'Last day, inclusive, on which the payments settled (`settled_at`), in America/Caracas. A payment created at 23:59 and settled at 00:01 belongs to the second day',
    ),
  ),
  status: Type.Optional(StringEnum(PAYMENT_STATUSES, { description: 'Only payments in this status' })),
  beneficiaryId: Type.Optional(Uuid('Only payments to this beneficiary')),
  customerId: Type.Optional(Uuid('Only payments of this user of yours (the `customerId` of the payout)')),
  batchId: Type.Optional(
    Uuid(
      'Only the payments this payout batch created (`POST /v1/payout-batches`). The CSV export then ends each line with a `batch_id` column',
    ),
  ),
  createdFrom: Type.Optional(
    Type.String({
      format: 'date-time',
      maxLength: 40,
      description:
        'Only payments created at or after this instant (RFC 3339, such as 2026-03-01T04:00:00.000Z): the `start` of a bucket of `GET /v1/reports/payouts`',
      example: '2026-03-01T04:00:00.000Z',
    }),
  ),
  createdBefore: Type.Optional(
    Type.String({
      format: 'date-time',
      maxLength: 40,
      description: 'Only payments created before this instant: the `end` of a report bucket',
      example: '2026-03-02T04:00:00.000Z',
    }),
  ),
  metadata_key: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: METADATA_KEY_LENGTH_MAX,
      description:
        'With `metadata_value`: only payments whose `metadata` has this key with exactly that value. Both or neither',
      example: 'order_id',
    }),
  ),
  metadata_value: Type.Optional(
    Type.String({
      maxLength: METADATA_VALUE_LENGTH_MAX,
      description: 'With `metadata_key`: the exact string value (case-sensitive, no pattern)',
      example: '6735',
    }),
  ),
};

export const StatementQuery = Type.Object({ ...StatementFilters, ...PageQuery });

/** The platform's read of a tenant's statement: the tenant's filters and pages, in the mode it names. */
export const AdminStatementQuery = Type.Object({
  mode: StringEnum(['test', 'live'] as const, {
    description: "Required: the tenant's statement of this mode (a tenant's key lists its own key's mode)",
  }),
  ...StatementFilters,
  ...PageQuery,
});

export const StatementExportQuery = Type.Object(StatementFilters);

const StatementRow = Component(
  'StatementRow',
  Type.Object(StatementRowFields, { description: 'One payment of the statement' }),
);

export const StatementPage = CursorPage('StatementPage', StatementRow, 'One page of the statement, newest first');

/** The CSV export's columns, in order: the statement row's fields (`batch_id` only in an export of one payout batch). */
export const STATEMENT_CSV_COLUMNS = (Object.keys(StatementRowFields) as (keyof typeof StatementRowFields)[]).filter(
  (column) => column !== 'batch_id',
);

export const StatementCsv = {
  description:
    "CSV (RFC 4180, UTF-8, CRLF line ends): a header row with the statement row's field names, then one payment per line in the order of the pages. Amounts are integers in minor units; an empty field is null; `metadata` is the JSON text of the object (`{}` when none was sent), quoted as RFC 4180 quotes any field. Safe to open in a spreadsheet: a field that would start with `=`, `+`, `-`, `@`, a tab or a carriage return is written with a leading `'` (shown as text, never run as a formula), and a bank reference is always letters, digits and hyphens.",
  content: {
    'text/csv': {
      schema: {
        type: 'string',
        example:
          'id,customer_id,beneficiary_id,status,status_reason,source_asset,source_amount,payout_asset,payout_amount,fee_amount,method,bank_reference,settled_at,created_at,metadata\r\n' +
          '7a2b9c1d-3e4f-4a5b-9c6d-7e8f9a0b1c2d,,9b2c4d6e-1a3b-4c5d-8e7f-0a1b2c3d4e5f,submitted,,BS,505000,BS,500000,5000,pago_movil,,,2026-03-01T14:05:40.027Z,{}\r\n' +
          '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f,,9b2c4d6e-1a3b-4c5d-8e7f-0a1b2c3d4e5f,settled,,BS,1010000,BS,1000000,10000,pago_movil,123456789012,2026-03-01T14:02:11.412Z,2026-03-01T14:00:05.118Z,"{""order_id"":""6735""}"\r\n',
      },
    },
  },
};
