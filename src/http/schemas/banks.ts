import { Type } from '@sinclair/typebox';
import { Component, StringEnum } from './common.ts';
import { INSTRUMENTS } from '../../domain/instrument.ts';

export const BankMethodQuery = Type.Object({
  method: StringEnum(INSTRUMENTS, { description: 'The instrument whose catalogue to list' }),
});

const Bank = Component(
  'Bank',
  Type.Object(
    {
      code: Type.String({ description: '4 digits; the beneficiary `bankCode`', example: '0102' }),
      name: Type.String({ description: 'Full name, for receipts' }),
      shortName: Type.String({ description: 'Never empty, for UI' }),
    },
    { description: 'A bank catalogue entry' },
  ),
);

export const BankList = Component(
  'BankList',
  Type.Object(
    {
      method: StringEnum(INSTRUMENTS),
      data: Type.Array(Bank),
    },
    { description: "The banks one instrument reaches; a code may carry a different name in each instrument's list" },
  ),
);
