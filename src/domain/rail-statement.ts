// A rail's settlement statement for one day, checked line by line against our payments of that rail:
// how a line is read (columns, their names, their values) and what a line or a payment of ours is
// found to be. Pure: the parsing of the file and the reads live in services/ and db/.
import { createHash } from 'node:crypto';
import type { AnomalyKind, Evidence } from './anomalies.ts';
import { isValidDate } from './caracas-time.ts';
import { validationFailed } from './errors.ts';
import type { PaymentStatus } from './payment-state.ts';

/** The standard columns of a statement, by the name the file's header gives them unless mapped. */
export const STATEMENT_COLUMNS = ['reference', 'bank_reference', 'amount', 'status', 'value_date'] as const;
export type StatementColumn = (typeof STATEMENT_COLUMNS)[number];

/** The final statuses a line may state. */
type StatementStatus = 'settled' | 'failed' | 'reversed';

/**
 * What a bank may write in the status column, compared without case and surrounding spaces: our own
 * words, and the usual English and Spanish ones of Venezuelan banks' statements.
 */
export const STATUS_ALIASES: Readonly<Record<StatementStatus, readonly string[]>> = {
  settled: [
    'settled',
    'paid',
    'completed',
    'liquidada',
    'liquidado',
    'pagada',
    'pagado',
    'acreditada',
    'acreditado',
    'exitosa',
    'aprobada',
  ],
  failed: ['failed', 'rejected', 'rechazada', 'rechazado', 'fallida', 'fallido'],
  reversed: ['reversed', 'returned', 'devuelta', 'devuelto', 'reversada', 'reversado'],
};
const STATUS_BY_ALIAS = new Map(
  Object.entries(STATUS_ALIASES).flatMap(([status, aliases]) => aliases.map((a) => [a, status as StatementStatus])),
);

/** The longest reference (ours or the bank's) a line may carry: longer is no reference of any rail. */
const STATEMENT_REFERENCE_LENGTH_MAX = 100;
/** The longest column name a mapping may give (a header cell longer than this is no column we read). */
const COLUMN_NAME_LENGTH_MAX = 100;
/** Amounts are bigint minor units: at most 18 digits, as every amount of the service. */
const AMOUNT = /^[0-9]{1,18}$/;
/** Our references are payment ids: a bank that writes one in capitals still names that payment. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a reference can be one of our payment ids (only those are looked up). */
export function isPaymentId(reference: string): boolean {
  return UUID.test(reference);
}

/** What a statement's result for one line or payment is. `matched` lines are only counted. */
export const STATEMENT_RESULTS = [
  'matched',
  'unknown_reference',
  'missing_at_rail',
  'amount_mismatch',
  'status_mismatch',
  'bank_reference_mismatch',
] as const;
export type StatementResult = (typeof STATEMENT_RESULTS)[number];
export type StatementMismatchKind = Exclude<StatementResult, 'matched'>;
export const STATEMENT_MISMATCH_KINDS = STATEMENT_RESULTS.filter((r): r is StatementMismatchKind => r !== 'matched');

/** The anomaly each mismatch opens. */
export const MISMATCH_ANOMALY_KINDS: Readonly<Record<StatementMismatchKind, AnomalyKind>> = {
  unknown_reference: 'statement_unknown_reference',
  missing_at_rail: 'statement_missing_at_rail',
  amount_mismatch: 'statement_amount_mismatch',
  status_mismatch: 'statement_status_mismatch',
  bank_reference_mismatch: 'statement_bank_reference_mismatch',
};

/** A line as read: every value checked, the amount as bigint minor units. */
export interface StatementLine {
  /** The line number in the file (the header is line 1). */
  line: number;
  reference: string;
  /** Empty only on a failed line. */
  bankReference: string;
  amount: bigint;
  status: StatementStatus;
}

/** Which header name each standard column has in this file. */
export type ColumnMapping = Readonly<Record<StatementColumn, string>>;

const DEFAULT_MAPPING: ColumnMapping = Object.fromEntries(STATEMENT_COLUMNS.map((c) => [c, c])) as Record<
  StatementColumn,
  string
>;

/**
 * The mapping a request gives (`reference:Referencia,amount:Monto`): each standard column it names is
 * read from that header; the others keep their standard names. A string on error.
 */
export function parseColumnMapping(text: string | undefined): ColumnMapping | string {
  if (text === undefined || text.trim() === '') return DEFAULT_MAPPING;
  const mapping: Record<string, string> = { ...DEFAULT_MAPPING };
  const given = new Set<string>();
  for (const pair of text.split(',')) {
    const at = pair.indexOf(':');
    const column = (at < 0 ? pair : pair.slice(0, at)).trim();
    const name = at < 0 ? '' : pair.slice(at + 1).trim();
    if (!(STATEMENT_COLUMNS as readonly string[]).includes(column))
      return `"${column}" is not a statement column (${STATEMENT_COLUMNS.join(', ')})`;
    if (name === '' || name.length > COLUMN_NAME_LENGTH_MAX)
      return `${column}: give the header name after a colon, 1 to ${COLUMN_NAME_LENGTH_MAX} characters`;
    if (given.has(column)) return `${column} is mapped twice`;
    given.add(column);
    mapping[column] = name;
  }
  const names = Object.values(mapping).map((n) => n.toLowerCase());
  if (new Set(names).size !== names.length) return 'two columns are mapped to one header name';
  return mapping as ColumnMapping;
}

/** Where each standard column is in a line, from the header (names compared without case); a string on error. */
export function columnPositions(
  header: readonly string[],
  mapping: ColumnMapping,
): Record<StatementColumn, number> | string {
  const names = header.map((h) => h.trim().toLowerCase());
  const positions: Partial<Record<StatementColumn, number>> = {};
  const missing: string[] = [];
  for (const column of STATEMENT_COLUMNS) {
    const wanted = mapping[column].toLowerCase();
    const at = names.indexOf(wanted);
    if (at < 0) missing.push(mapping[column] === column ? column : `${mapping[column]} (${column})`);
    else if (names.indexOf(wanted, at + 1) >= 0) return `the header names "${mapping[column]}" twice`;
    else positions[column] = at;
  }
  if (missing.length > 0) return `the header lacks ${missing.join(', ')}`;
  return positions as Record<StatementColumn, number>;
}

/** One line of the file read against the positions and the statement's day; a string says what is wrong. */
export function readLine(
  cells: readonly string[],
  positions: Record<StatementColumn, number>,
  day: string,
  line: number,
): StatementLine | string {
  const cell = (c: StatementColumn) => (cells[positions[c]] ?? '').trim();
  const given = cell('reference');
  const reference = UUID.test(given) ? given.toLowerCase() : given;
  if (reference === '' || reference.length > STATEMENT_REFERENCE_LENGTH_MAX)
    return `reference: 1 to ${STATEMENT_REFERENCE_LENGTH_MAX} characters`;
  const amount = cell('amount');
  if (!AMOUNT.test(amount))
    return `amount: "${amount.slice(0, 40)}" is not an amount in minor units (digits only, at most 18)`;
  const status = STATUS_BY_ALIAS.get(cell('status').toLowerCase());
  if (status === undefined)
    return `status: "${cell('status').slice(0, 40)}" is not a known status (see the accepted words of settled, failed and reversed)`;
  const bankReference = cell('bank_reference');
  if (bankReference.length > STATEMENT_REFERENCE_LENGTH_MAX)
    return `bank_reference: at most ${STATEMENT_REFERENCE_LENGTH_MAX} characters`;
  if (bankReference === '' && status !== 'failed') return `bank_reference: required on a ${status} line`;
  const valueDate = cell('value_date');
  if (!isValidDate(valueDate)) return `value_date: "${valueDate.slice(0, 40)}" is not a date (YYYY-MM-DD)`;
  if (valueDate !== day) return `value_date: ${valueDate} is not the statement's day ${day}`;
  return { line, reference, bankReference, amount: BigInt(amount), status };
}

/** What we hold of a payment a line is compared with. */
export interface StatementPayment {
  tenant_id: string;
  mode: 'test' | 'live';
  id: string;
  status: PaymentStatus;
  payout_amount: bigint;
  bank_reference: string | null;
  settled_at: Date | null;
}

/** One disagreement, with both sides. */
export interface StatementMismatch {
  kind: StatementMismatchKind;
  line: number | null;
  reference: string;
  payment: StatementPayment | null;
  ours: Evidence;
  theirs: Evidence;
}

/** The statuses of ours a line's status agrees with: a return is a later event, so a settled line agrees with a reversed payment. */
const AGREEING: Readonly<Record<StatementStatus, readonly PaymentStatus[]>> = {
  settled: ['settled', 'reversed'],
  failed: ['failed'],
  reversed: ['reversed'],
};

function evidenceOfPayment(payment: StatementPayment | null): Evidence {
  if (payment === null) return { payment: null };
  return {
    payment: payment.id,
    status: payment.status,
    amount: payment.payout_amount.toString(),
    bankReference: payment.bank_reference,
    settledAt: payment.settled_at?.toISOString() ?? null,
  };
}

function evidenceOfLine(line: StatementLine): Evidence {
  return {
    line: String(line.line),
    reference: line.reference,
    status: line.status,
    amount: line.amount.toString(),
    bankReference: line.bankReference || null,
  };
}

/**
 * A line against our payment of that rail with its reference (undefined: none): no mismatch is a
 * matched line; else `unknown_reference` alone, or each of status, amount and bank reference that
 * disagrees (the bank reference compared only when both sides have one).
 */
export function compareLine(line: StatementLine, payment: StatementPayment | undefined): StatementMismatch[] {
  const theirs = evidenceOfLine(line);
  if (payment === undefined)
    return [
      {
        kind: 'unknown_reference',
        line: line.line,
        reference: line.reference,
        payment: null,
        ours: evidenceOfPayment(null),
        theirs,
      },
    ];
  const kinds: StatementMismatchKind[] = [];
  if (!AGREEING[line.status].includes(payment.status)) kinds.push('status_mismatch');
  if (line.amount !== payment.payout_amount) kinds.push('amount_mismatch');
  if (line.bankReference !== '' && payment.bank_reference !== null && line.bankReference !== payment.bank_reference)
    kinds.push('bank_reference_mismatch');
  const ours = evidenceOfPayment(payment);
  return kinds.map((kind) => ({ kind, line: line.line, reference: line.reference, payment, ours, theirs }));
}

/** Our payment that settled on the statement's day and that no line names. */
export function missingAtRail(payment: StatementPayment): StatementMismatch {
  return {
    kind: 'missing_at_rail',
    line: null,
    reference: payment.id,
    payment,
    ours: evidenceOfPayment(payment),
    theirs: { line: null },
  };
}

/**
 * One anomaly per rail, day, reference and kind, whichever file says it: posting the statement again,
 * or a corrected one, opens nothing new for what was already seen.
 */
export function statementDedupKey(kind: StatementMismatchKind, rail: string, day: string, reference: string): string {
  return `${MISMATCH_ANOMALY_KINDS[kind]}:${createHash('sha256')
    .update(JSON.stringify([rail, day, reference]))
    .digest('hex')}`;
}

const MISMATCH_CURSOR = /^m1:([1-9][0-9]{0,9})$/;

/** The cursor of a statement's next page of mismatches: after the mismatch numbered `seq`. */
export function mismatchCursor(seq: number): string {
  return Buffer.from(`m1:${seq}`, 'utf8').toString('base64url');
}

/** The mismatch a page starts after (0: the first page); a 400 naming `cursor` for one this service did not issue. */
export function mismatchesAfter(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  const match = /^[A-Za-z0-9_-]{1,40}$/.test(cursor)
    ? MISMATCH_CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
    : null;
  if (!match)
    throw validationFailed([
      { field: 'cursor', message: 'must be the next_cursor of a previous page of this statement, unchanged' },
    ]);
  return Number(match[1]);
}
