import { Type } from '@sinclair/typebox';
import { AccountCheckField, NationalIdCheckField } from '../../contract/payout-answer.ts';
import { BENEFICIARY_STATUSES, FULL_NAME_LENGTH_MAX } from '../../domain/beneficiary.ts';
import {
  ASSETS,
  Asset,
  Component,
  DateTime,
  lengthCheckedInCode,
  Nullable,
  PageQuery,
  StringEnum,
  Uuid,
} from './common.ts';
import { Metadata, MetadataInput } from './metadata.ts';

// The body schema checks JSON types (and the asset enumeration) only; formats and the bank
// catalogue are checked by `validateBeneficiary`, which reports every violation in one 400 and
// normalises before checking (a lowercase national id is accepted). The descriptions carry the
// formats for the reference. Each string states its longest valid value (`maxLength`), left to those
// rules as well (they count after trimming surrounding spaces).
export const RegisterBeneficiaryBody = Type.Object({
  fullName: Type.String({
    ...lengthCheckedInCode(FULL_NAME_LENGTH_MAX),
    description: 'Holder name exactly as the destination bank holds it; 1 to 100 characters',
    example: 'María Pérez',
  }),
  nationalId: Type.String({
    ...lengthCheckedInCode(10),
    description: 'V, E, J, G or P (upper case) followed by 6 to 9 digits',
    example: 'V12345678',
  }),
  bankCode: Type.String({
    ...lengthCheckedInCode(4),
    description: '4 digits; must be in the catalogue of the instrument used (`GET /v1/payouts/banks`)',
    example: '0102',
  }),
  accountNumber: Type.Optional(
    Nullable(
      Type.String({
        ...lengthCheckedInCode(20),
        description:
          'Needed for `transferencia`: 16 to 20 digits starting with `bankCode`. Giving it makes the instrument `transferencia`; without it the instrument is `pago_movil`',
        example: '01020123450123456789',
      }),
    ),
  ),
  phone: Type.Optional(
    Nullable(
      Type.String({
        ...lengthCheckedInCode(11),
        description: 'Needed for both instruments: `04` followed by 9 digits',
        example: '04141234567',
      }),
    ),
  ),
  asset: Type.Optional(StringEnum(ASSETS, { description: 'Asset delivered to this beneficiary (default BS)' })),
  country: Type.Optional(
    Type.String({
      ...lengthCheckedInCode(2),
      description: 'ISO 3166-1 alpha-2 country code (default VE)',
      example: 'VE',
    }),
  ),
  metadata: Type.Optional(
    MetadataInput(
      'Sending an identity that is already registered (same `nationalId`, `bankCode` and instrument) with `metadata` replaces its stored metadata (`{}` clears it); without `metadata` the stored metadata stays as it is.',
    ),
  ),
});

/** Computed from the account number on every answer: informational, nothing is refused for it. */
const BeneficiaryFields = {
  id: Uuid(),
  full_name: Type.String(),
  national_id: Type.String(),
  national_id_check: NationalIdCheckField,
  bank_code: Type.String({ description: '4 digits' }),
  account_number: Nullable(Type.String()),
  account_check: AccountCheckField,
  phone: Nullable(Type.String()),
  asset: Asset,
  country: Type.String(),
  status: StringEnum(BENEFICIARY_STATUSES),
  payout_count: Type.Integer({ description: 'Disbursements that arrived successfully; an anti-fraud signal' }),
  last_success_at: Nullable(DateTime()),
  last_failure_reason: Nullable(Type.String()),
  created_at: DateTime(),
  metadata: Metadata,
};

export const Beneficiary = Component(
  'Beneficiary',
  Type.Object(BeneficiaryFields, { description: 'A registered beneficiary' }),
);

export const RegisteredBeneficiary = Component(
  'RegisteredBeneficiary',
  Type.Object(
    {
      ...BeneficiaryFields,
      created: Type.Boolean({
        description: 'false if a beneficiary with the same national id, bank and instrument already existed',
      }),
    },
    { description: 'The beneficiary, and whether this call created it' },
  ),
);

export const BeneficiaryList = Component(
  'BeneficiaryList',
  Type.Object(
    {
      data: Type.Array(Beneficiary),
      has_more: Type.Boolean(),
      next_cursor: Nullable(
        Type.String({ description: 'Pass as `cursor` to read the next page; null on the last page' }),
      ),
    },
    { description: 'One page of beneficiaries, newest first' },
  ),
);

export const BeneficiaryListQuery = Type.Object(PageQuery);
