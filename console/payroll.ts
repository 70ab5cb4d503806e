// A payroll file (CSV, one payout a row) read into payout batch items, each row checked before
// anything is sent: what the operator fixes in the sheet is named by its row and column. Amounts are
// read as people write them in payroll sheets ("1500.50" bolivares) and become minor units by string
// arithmetic only: a float would pay 0.29 Bs as 28 cents.
// Pure functions, no DOM: unit-tested in Node.
import { CsvSyntaxError, parseCsv } from './csv.ts';

/** @internal Exported for its tests, not used elsewhere. */
export const PAYROLL_COLUMNS = [
  'reference',
  'amount',
  'method',
  'beneficiary_id',
  'full_name',
  'national_id',
  'bank_code',
  'phone',
  'account_number',
  'sender_national_id',
  'sender_first_name',
  'sender_last_name',
  'sender_phone',
  'sender_email',
] as const;

type Column = (typeof PAYROLL_COLUMNS)[number];
type Values = Record<Column, string>;

const REQUIRED_COLUMNS: Column[] = ['reference', 'amount', 'method'];
const INLINE_BENEFICIARY: Column[] = ['full_name', 'national_id', 'bank_code'];
const INLINE_OPTIONAL: Column[] = ['phone', 'account_number'];
const SENDER: Column[] = [
  'sender_national_id',
  'sender_first_name',
  'sender_last_name',
  'sender_phone',
  'sender_email',
];

/** The template offered on the payroll screen and in docs/console.md: a registered beneficiary, an inline one with a sender. */
export const PAYROLL_TEMPLATE = `${PAYROLL_COLUMNS.join(',')}
payroll-2026-11/emp-0001,1500.50,pago_movil,3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f,,,,,,,,,,
payroll-2026-11/emp-0002,2250,transferencia,,María Pérez,V12345678,0102,04141234567,01020123450123456789,V11222333,Ana,Rojas,04121234567,ana@example.com
`;

const METHODS = ['pago_movil', 'transferencia'] as const;
type Method = (typeof METHODS)[number];

/** The batch API's reference: 1 to 64 of A-Z a-z 0-9 . _ : / # - */
const REFERENCE = /^[A-Za-z0-9._:/#-]{1,64}$/;
const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** The largest amount the API takes (an int64 it can read exactly as a JSON number): 2^53 − 1 minor units. */
const MAX_AMOUNT_MINOR = 9007199254740991n;

interface BatchItem {
  reference: string;
  deliver: { asset: 'BS'; amount: bigint };
  method: Method;
  beneficiaryId?: string;
  beneficiary?: { fullName: string; nationalId: string; bankCode: string; phone?: string; accountNumber?: string };
  sender?: { nationalId: string; firstName: string; lastName: string; phone: string; email: string };
}

export interface PayrollRow {
  /** The row in a spreadsheet: the header is row 1, the first payout row 2. */
  row: number;
  values: Values;
  /** Every problem of the row, `column: what is wrong`; none means `item` is set. */
  problems: string[];
  item?: BatchItem;
  /** Minor units, when the amount is valid (even if something else in the row is not). */
  amount?: bigint;
}

export interface PayrollSheet {
  rows: PayrollRow[];
  /** A problem of the whole file (not CSV, columns missing or unknown): no row is read then. */
  fileProblem?: string;
}

/**
 * Bolivares as written in a payroll sheet ("1500.50", "1500.5", "1500") → minor units, or why not.
 * Digits, then optionally a point and one or two decimals; no sign, no separators, no exponent.
 * @internal Exported for its tests, not used elsewhere.
 */
export function bolivaresToMinor(text: string): { minor: bigint } | { problem: string } {
  const value = text.trim();
  if (value === '') return { problem: 'missing' };
  if (value.startsWith('-')) return { problem: 'must be more than 0' };
  if (value.includes(','))
    return {
      problem: `"${value}" has a comma: write the amount without thousands separators and with a point before the decimals, such as 1500.50`,
    };
  const parts = /^([0-9]+)(?:\.([0-9]+))?$/.exec(value);
  if (!parts) return { problem: `"${value}" is not an amount in bolivares, such as 1500.50` };
  const fraction = parts[2] ?? '';
  if (fraction.length > 2) return { problem: `"${value}" has more than 2 decimals` };
  const digits = (parts[1]! + fraction.padEnd(2, '0')).replace(/^0+/, '');
  if (digits === '') return { problem: 'must be more than 0' };
  // 17 digits and more are past the bound anyway: compared as text first, so BigInt sees only a short string.
  if (digits.length > 16 || BigInt(digits) > MAX_AMOUNT_MINOR)
    return { problem: `"${value}" is more than the largest amount (90,071,992,547,409.91 Bs)` };
  return { minor: BigInt(digits) };
}

/** The header's columns by position, or the problem with it. */
function readHeader(header: string[]): { columns: Column[] } | { problem: string } {
  const names = header.map((name) => name.trim().toLowerCase());
  // A spreadsheet set to decimal commas (Spanish locales) writes "CSV" with semicolons.
  if (names.length === 1 && names[0]!.includes(';'))
    return {
      problem:
        'the columns are separated by semicolons: save the sheet as CSV with commas (and amounts with a decimal point)',
    };
  const unknown = names.filter((name) => !(PAYROLL_COLUMNS as readonly string[]).includes(name));
  if (unknown.length > 0)
    return {
      problem: `unknown column${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n}"`).join(', ')}: the columns are ${PAYROLL_COLUMNS.join(', ')}`,
    };
  const repeated = names.filter((name, i) => names.indexOf(name) !== i);
  if (repeated.length > 0) return { problem: `column ${repeated[0]} appears twice` };
  const missing = REQUIRED_COLUMNS.filter((name) => !names.includes(name));
  if (missing.length > 0)
    return {
      problem: `missing column${missing.length > 1 ? 's' : ''} ${missing.join(', ')} (the first row must name the columns)`,
    };
  return { columns: names as Column[] };
}

/** Reads a payroll file: every row with its problems and, when it has none, its batch item. */
export function readPayroll(text: string): PayrollSheet {
  let records;
  try {
    records = parseCsv(text);
  } catch (error) {
    if (error instanceof CsvSyntaxError)
      return { rows: [], fileProblem: `Not a well-formed CSV file: ${error.message}.` };
    throw error;
  }
  const [header, ...body] = records;
  if (header === undefined) return { rows: [], fileProblem: 'The file is empty.' };
  const columns = readHeader(header.fields);
  if ('problem' in columns) return { rows: [], fileProblem: `The header row: ${columns.problem}.` };
  const rows: PayrollRow[] = [];
  body.forEach((record, i) => {
    // Spreadsheets write blank rows (",,,,"): nothing to pay there.
    if (record.fields.every((field) => field.trim() === '')) return;
    const values = Object.fromEntries(PAYROLL_COLUMNS.map((column) => [column, ''])) as Values;
    columns.columns.forEach((column, at) => (values[column] = record.fields[at]?.trim() ?? ''));
    const row = readRow(i + 2, values);
    if (record.fields.length !== columns.columns.length) {
      row.problems.unshift(`the row has ${record.fields.length} fields, the header ${columns.columns.length}`);
      delete row.item;
    }
    rows.push(row);
  });
  markRepeatedReferences(rows);
  return { rows };
}

function readRow(row: number, values: Values): PayrollRow {
  const problems: string[] = [];
  if (values.reference === '') problems.push('reference: missing');
  else if (!REFERENCE.test(values.reference))
    problems.push('reference: must be 1 to 64 characters of A-Z a-z 0-9 . _ : / # -');
  const amount = bolivaresToMinor(values.amount);
  if ('problem' in amount) problems.push(`amount: ${amount.problem}`);
  if (values.method === '') problems.push('method: missing (pago_movil or transferencia)');
  else if (!(METHODS as readonly string[]).includes(values.method))
    problems.push(`method: "${values.method}" is not pago_movil or transferencia`);
  const beneficiary = readBeneficiary(values, problems);
  const sender = readSender(values, problems);
  const minor = 'minor' in amount ? amount.minor : undefined;
  if (problems.length > 0 || minor === undefined) return { row, values, problems, amount: minor };
  return {
    row,
    values,
    problems,
    amount: minor,
    item: {
      reference: values.reference,
      deliver: { asset: 'BS', amount: minor },
      method: values.method as Method,
      ...beneficiary,
      ...(sender ? { sender } : {}),
    },
  };
}

function readBeneficiary(values: Values, problems: string[]): Pick<BatchItem, 'beneficiaryId' | 'beneficiary'> {
  const inline = [...INLINE_BENEFICIARY, ...INLINE_OPTIONAL].filter((column) => values[column] !== '');
  if (values.beneficiary_id !== '') {
    if (inline.length > 0)
      problems.push(
        `beneficiary: beneficiary_id and ${inline.join(', ')} both given: give the registered beneficiary's id or the beneficiary's fields, not both`,
      );
    else if (!UUID.test(values.beneficiary_id)) problems.push('beneficiary_id: must be a beneficiary id (a UUID)');
    return { beneficiaryId: values.beneficiary_id };
  }
  if (inline.length === 0) {
    problems.push('beneficiary: neither beneficiary_id nor the beneficiary (full_name, national_id, bank_code)');
    return {};
  }
  const missing = INLINE_BENEFICIARY.filter((column) => values[column] === '');
  if (missing.length > 0)
    problems.push(
      `beneficiary: ${missing.join(', ')} missing (an inline beneficiary needs full_name, national_id and bank_code)`,
    );
  return {
    beneficiary: {
      fullName: values.full_name,
      nationalId: values.national_id,
      bankCode: values.bank_code,
      ...(values.phone !== '' ? { phone: values.phone } : {}),
      ...(values.account_number !== '' ? { accountNumber: values.account_number } : {}),
    },
  };
}

/** All five sender columns, or none (the stored or default sender then). */
function readSender(values: Values, problems: string[]): BatchItem['sender'] {
  const given = SENDER.filter((column) => values[column] !== '');
  if (given.length === 0) return undefined;
  if (given.length < SENDER.length) {
    const missing = SENDER.filter((column) => values[column] === '');
    problems.push(
      `sender: ${missing.join(', ')} missing (give all five sender columns, or none for the stored sender)`,
    );
    return undefined;
  }
  return {
    nationalId: values.sender_national_id,
    firstName: values.sender_first_name,
    lastName: values.sender_last_name,
    phone: values.sender_phone,
    email: values.sender_email,
  };
}

/** A reference pays once: a second row with it would be answered with the first row's payment. */
function markRepeatedReferences(rows: PayrollRow[]): void {
  const first = new Map<string, number>();
  for (const row of rows) {
    const reference = row.values.reference;
    if (reference === '') continue;
    const earlier = first.get(reference);
    if (earlier === undefined) {
      first.set(reference, row.row);
      continue;
    }
    row.problems.push(`reference: repeated (row ${earlier} has it too)`);
    delete row.item;
  }
}

/** The items in batches of at most `size`, in row order. */
export function batchesOf<T>(items: T[], size: number): T[][] {
  const batches: T[][] = [];
  for (let at = 0; at < items.length; at += size) batches.push(items.slice(at, at + size));
  return batches;
}

/**
 * The Idempotency-Key of the nth batch (from 0) of one upload: the same on every retry of that
 * upload's submit, so a batch whose answer was lost is answered again, never paid twice.
 */
export const batchKey = (uploadKey: string, n: number) => `payroll:${uploadKey}:${n}`;

/** The batch API's item fields, named as the file's columns. */
const COLUMN_OF_FIELD: Record<string, Column> = {
  reference: 'reference',
  deliver: 'amount',
  'deliver.amount': 'amount',
  method: 'method',
  beneficiaryId: 'beneficiary_id',
  'beneficiary.fullName': 'full_name',
  'beneficiary.nationalId': 'national_id',
  'beneficiary.bankCode': 'bank_code',
  'beneficiary.phone': 'phone',
  'beneficiary.accountNumber': 'account_number',
  'sender.nationalId': 'sender_national_id',
  'sender.firstName': 'sender_first_name',
  'sender.lastName': 'sender_last_name',
  'sender.phone': 'sender_phone',
  'sender.email': 'sender_email',
};

/**
 * A 400's `meta.errors` of the batch of `itemRows` (the row of each of its items, in item order) as
 * problems by row: `items.3.beneficiary.phone` is the fourth item's phone column. Errors that name
 * no item are left in `other`.
 */
export function problemsOfFields(
  errors: Array<{ field: string; message: string }>,
  itemRows: number[],
): { byRow: Map<number, string[]>; other: string[] } {
  const byRow = new Map<number, string[]>();
  const other: string[] = [];
  for (const { field, message } of errors) {
    const parts = /^items[.[]([0-9]+)\]?(?:\.(.+))?$/.exec(field);
    const row = parts ? itemRows[Number(parts[1])] : undefined;
    if (!parts || row === undefined) {
      other.push(`${field}: ${message}`);
      continue;
    }
    const rest = parts[2];
    const column = rest === undefined ? 'row' : (COLUMN_OF_FIELD[rest] ?? rest);
    byRow.set(row, [...(byRow.get(row) ?? []), `${column}: ${message}`]);
  }
  return { byRow, other };
}
