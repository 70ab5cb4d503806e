// A payroll file becomes payout batch items exactly: amounts in bolivares as written in a sheet are
// minor units by string arithmetic (never a float: 0.29 Bs is 29 cents, not 28), every problem of a
// row is named by its column before anything is sent, the service's 400 is put back on the rows, and
// the batches' keys are the same on every retry of one upload.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { jsonWithIntegers } from '../../console/format.ts';
import {
  batchesOf,
  batchKey,
  bolivaresToMinor,
  PAYROLL_COLUMNS,
  PAYROLL_TEMPLATE,
  problemsOfFields,
  readPayroll,
} from '../../console/payroll.ts';

const HEADER = PAYROLL_COLUMNS.join(',');
const BENEFICIARY = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';
const SENDER = 'V11222333,Ana,Rojas,04121234567,ana@example.com';
const INLINE = 'María Pérez,V99990001,0102,04141234567,';

const minor = (text: string) => {
  const read = bolivaresToMinor(text);
  return 'minor' in read ? read.minor : read.problem;
};
const problemsOf = (...lines: string[]) => readPayroll([HEADER, ...lines].join('\n')).rows.map((row) => row.problems);

describe('payroll amounts', () => {
  it('are minor units exactly, where a float would be off by a cent', () => {
    assert.equal(minor('1500.50'), 150050n);
    assert.equal(minor('1500.5'), 150050n);
    assert.equal(minor('1500'), 150000n);
    assert.equal(minor(' 0.01 '), 1n);
    assert.equal(minor('007.10'), 710n);
    // Each of these times 100 in floating point is not an integer: Math.round hides it, truncation pays a cent less.
    for (const [text, cents] of [
      ['0.29', 29n],
      ['1.15', 115n],
      ['4.35', 435n],
      ['1005.53', 100553n],
      ['90071992547409.91', 9007199254740991n],
    ] as const) {
      assert.equal(minor(text), cents, text);
    }
    assert.notEqual(Math.trunc(Number('0.29') * 100), 29, 'the float trap this guards against');
  });

  it('are every amount up to the bound, written with 0, 1 or 2 decimals', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 9007199254740991n }), fc.constantFrom(0, 1, 2), (cents, decimals) => {
        const whole = (cents / 100n).toString();
        const fraction = (cents % 100n).toString().padStart(2, '0');
        const text =
          decimals === 2
            ? `${whole}.${fraction}`
            : decimals === 1 && fraction.endsWith('0')
              ? `${whole}.${fraction[0]}`
              : fraction === '00'
                ? whole
                : `${whole}.${fraction}`;
        assert.equal(minor(text), cents, text);
        // And it reaches the API as the same digits.
        assert.equal(jsonWithIntegers({ amount: minor(text) }), `{"amount":${cents}}`);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuse what is not a positive amount with at most two decimals, saying why', () => {
    const refused: Array<[string, RegExp]> = [
      ['', /^missing$/],
      ['0', /more than 0/],
      ['0.00', /more than 0/],
      ['-5', /more than 0/],
      ['1,500.50', /comma/],
      ['1.500,50', /comma/],
      ['1500,5', /comma/],
      ['1500.505', /more than 2 decimals/],
      ['1.500', /more than 2 decimals/],
      ['1e3', /not an amount/],
      ['.5', /not an amount/],
      ['5.', /not an amount/],
      ['Bs 10', /not an amount/],
      ['+10', /not an amount/],
      ['١٢', /not an amount/],
      ['90071992547409.92', /largest amount/],
      ['123456789012345678901', /largest amount/],
    ];
    for (const [text, problem] of refused) assert.match(String(minor(text)), problem, text);
  });
});

describe('payroll rows', () => {
  it('become batch items: a registered beneficiary, an inline one, the sender when given', () => {
    const sheet = readPayroll(
      `\uFEFF${HEADER}\r\nemp-1,1500.50,pago_movil,${BENEFICIARY},,,,,,,,,,\r\n"emp-2",2250,transferencia,,"Pérez, María",V12345678,0102,04141234567,01020123450123456789,${SENDER}\r\n`,
    );
    assert.equal(sheet.fileProblem, undefined);
    assert.deepEqual(
      sheet.rows.map((row) => [row.row, row.problems, row.item]),
      [
        [
          2,
          [],
          {
            reference: 'emp-1',
            deliver: { asset: 'BS', amount: 150050n },
            method: 'pago_movil',
            beneficiaryId: BENEFICIARY,
          },
        ],
        [
          3,
          [],
          {
            reference: 'emp-2',
            deliver: { asset: 'BS', amount: 225000n },
            method: 'transferencia',
            beneficiary: {
              fullName: 'Pérez, María',
              nationalId: 'V12345678',
              bankCode: '0102',
              phone: '04141234567',
              accountNumber: '01020123450123456789',
            },
            sender: {
              nationalId: 'V11222333',
              firstName: 'Ana',
              lastName: 'Rojas',
              phone: '04121234567',
              email: 'ana@example.com',
            },
          },
        ],
      ],
    );
  });

  it('take the columns in any order, only reference, amount and method required, and skip blank rows', () => {
    const sheet = readPayroll(
      `Method, Amount ,reference,beneficiary_id\npago_movil,10,r-1,${BENEFICIARY}\n,,,\n\npago_movil,20,r-2,${BENEFICIARY}\n`,
    );
    assert.deepEqual(
      sheet.rows.map((row) => [row.row, row.item?.reference, row.amount]),
      [
        [2, 'r-1', 1000n],
        [5, 'r-2', 2000n],
      ],
    );
  });

  it('name every problem of a row by its column', () => {
    assert.deepEqual(problemsOf(`,abc,cheque,,,,,,,V1,,,,`), [
      [
        'reference: missing',
        'amount: "abc" is not an amount in bolivares, such as 1500.50',
        'method: "cheque" is not pago_movil or transferencia',
        'beneficiary: neither beneficiary_id nor the beneficiary (full_name, national_id, bank_code)',
        'sender: sender_first_name, sender_last_name, sender_phone, sender_email missing (give all five sender columns, or none for the stored sender)',
      ],
    ]);
    assert.deepEqual(problemsOf(`bad ref!,10,,${BENEFICIARY},Ana,,,,,,,,,`), [
      [
        'reference: must be 1 to 64 characters of A-Z a-z 0-9 . _ : / # -',
        'method: missing (pago_movil or transferencia)',
        "beneficiary: beneficiary_id and full_name both given: give the registered beneficiary's id or the beneficiary's fields, not both",
      ],
    ]);
    assert.deepEqual(problemsOf(`r-1,10,pago_movil,not-a-uuid,,,,,,,,,,`, `r-2,10,pago_movil,,Ana,,0102,,,,,,,`), [
      ['beneficiary_id: must be a beneficiary id (a UUID)'],
      ['beneficiary: national_id missing (an inline beneficiary needs full_name, national_id and bank_code)'],
    ]);
    assert.deepEqual(problemsOf(`${'r'.repeat(65)},10,pago_movil,${BENEFICIARY},,,,,,,,,,`)[0], [
      'reference: must be 1 to 64 characters of A-Z a-z 0-9 . _ : / # -',
    ]);
    assert.deepEqual(problemsOf(`r-1,10,pago_movil,${BENEFICIARY}`)[0], ['the row has 4 fields, the header 14']);
  });

  it('flag a reference repeated in the file on its later rows, naming the first', () => {
    const sheet = readPayroll(
      [
        HEADER,
        `r-1,10,pago_movil,,${INLINE},,,,,`,
        `r-2,10,pago_movil,,${INLINE},,,,,`,
        `r-1,12,pago_movil,,${INLINE},,,,,`,
      ].join('\n'),
    );
    assert.deepEqual(
      sheet.rows.map((row) => [row.problems, row.item === undefined]),
      [
        [[], false],
        [[], false],
        [['reference: repeated (row 2 has it too)'], true],
      ],
    );
  });

  it('refuse a file that is not a payroll: empty, not CSV, columns missing, unknown or repeated', () => {
    const problem = (text: string) => readPayroll(text).fileProblem;
    assert.equal(problem(''), 'The file is empty.');
    assert.match(problem(`${HEADER}\nr,"10`)!, /^Not a well-formed CSV file: line 2: a quoted field that never ends/);
    assert.match(problem('reference,amount\nr,1')!, /missing column method/);
    assert.match(problem(`${HEADER},acount_number\n`)!, /unknown column "acount_number"/);
    assert.match(problem('reference,amount,method,amount\n')!, /column amount appears twice/);
    assert.match(
      problem('reference;amount;method\nr-1;1500,50;pago_movil\n')!,
      /separated by semicolons: save the sheet as CSV with commas/,
    );
  });

  it('read the template offered to operators without a problem', () => {
    const sheet = readPayroll(PAYROLL_TEMPLATE);
    assert.equal(sheet.fileProblem, undefined);
    assert.deepEqual(
      sheet.rows.map((row) => row.problems),
      [[], []],
    );
  });
});

describe('payroll submission', () => {
  it('splits items into batches of at most the bound, in order', () => {
    const items = Array.from({ length: 2501 }, (_, i) => i);
    const batches = batchesOf(items, 1000);
    assert.deepEqual(
      batches.map((batch) => [batch[0], batch.length]),
      [
        [0, 1000],
        [1000, 1000],
        [2000, 501],
      ],
    );
    assert.deepEqual(batchesOf([], 1000), []);
  });

  it('keys each batch by its upload and its number, the same on every retry', () => {
    assert.equal(batchKey('u-1', 0), batchKey('u-1', 0));
    assert.notEqual(batchKey('u-1', 0), batchKey('u-1', 1));
    assert.notEqual(batchKey('u-1', 0), batchKey('u-2', 0));
    assert.match(batchKey(crypto.randomUUID(), 12), /^[\x20-\x7e]{1,255}$/);
  });

  it("puts the service's field errors back on the rows the items came from, named as the columns", () => {
    const rowsOfBatch = [7, 9, 12, 13];
    const { byRow, other } = problemsOfFields(
      [
        { field: 'items.2.beneficiary.phone', message: 'must be 04 followed by 9 digits' },
        { field: 'items.2.sender.email', message: 'must be an email address' },
        { field: 'items.0.reference', message: 'is repeated in the batch' },
        { field: 'items.3', message: 'must have deliver or quoteId' },
        { field: 'items.9.method', message: 'unknown' },
        { field: 'items', message: 'must have at least 1 item' },
      ],
      rowsOfBatch,
    );
    assert.deepEqual(
      [...byRow],
      [
        [12, ['phone: must be 04 followed by 9 digits', 'sender_email: must be an email address']],
        [7, ['reference: is repeated in the batch']],
        [13, ['row: must have deliver or quoteId']],
      ],
    );
    assert.deepEqual(other, ['items.9.method: unknown', 'items: must have at least 1 item']);
  });
});
