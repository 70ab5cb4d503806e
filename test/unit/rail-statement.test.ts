// How a rail statement's lines are read and judged (domain/rail-statement.ts), without a database.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  columnPositions,
  compareLine,
  mismatchCursor,
  mismatchesAfter,
  parseColumnMapping,
  readLine,
  statementDedupKey,
  type StatementPayment,
} from '../../src/domain/rail-statement.ts';

const DAY = '2026-12-01';
const ID = '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f';
const STANDARD = parseColumnMapping(undefined);
if (typeof STANDARD === 'string') throw new Error(STANDARD);
const POSITIONS = columnPositions(['reference', 'bank_reference', 'amount', 'status', 'value_date'], STANDARD);
if (typeof POSITIONS === 'string') throw new Error(POSITIONS);

const line = (cells: string[]) => readLine(cells, POSITIONS, DAY, 2);
const payment = (over: Partial<StatementPayment> = {}): StatementPayment => ({
  tenant_id: '00000000-0000-4000-8000-000000000001',
  mode: 'live',
  id: ID,
  status: 'settled',
  payout_amount: 1_000_000n,
  bank_reference: '004512398871',
  settled_at: new Date(`${DAY}T15:00:00Z`),
  ...over,
});

describe('rail statement lines', () => {
  it('reads a line: amounts as bigint minor units, status words of the banks, our reference in lower case', () => {
    assert.deepEqual(line([ID.toUpperCase(), '004512398871', '1000000', ' Liquidada ', DAY]), {
      line: 2,
      reference: ID,
      bankReference: '004512398871',
      amount: 1_000_000n,
      status: 'settled',
    });
    assert.equal(
      (line(['x', '', '999999999999999999', 'RECHAZADA', DAY]) as { amount: bigint }).amount,
      999_999_999_999_999_999n,
    );
  });

  it('refuses an amount that is not digits only, whatever else it is', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !/^[0-9]{1,18}$/.test(s.trim())),
        (amount) => {
          assert.equal(typeof line([ID, '1', amount, 'settled', DAY]), 'string');
        },
      ),
    );
    for (const amount of ['12.50', '-5', '1,000', '1e6', '0x10', '1234567890123456789'])
      assert.match(line([ID, '1', amount, 'settled', DAY]) as string, /^amount/);
  });

  it('refuses an unknown status, a missing bank reference on a settled line, and another day', () => {
    assert.match(line([ID, '1', '5', 'maybe', DAY]) as string, /^status/);
    assert.match(line([ID, '', '5', 'settled', DAY]) as string, /^bank_reference: required on a settled line/);
    assert.equal(typeof line([ID, '', '5', 'failed', DAY]), 'object', 'a failed line may have none');
    assert.match(line([ID, '1', '5', 'settled', '2026-12-02']) as string, /is not the statement's day/);
    assert.match(line([ID, '1', '5', 'settled', '01/12/2026']) as string, /^value_date/);
  });
});

describe('column mapping', () => {
  it('maps some columns and keeps the standard names of the others; header names are compared without case', () => {
    const mapping = parseColumnMapping('reference:Referencia, amount : Monto');
    assert.equal(typeof mapping, 'object');
    assert.deepEqual(
      columnPositions(['MONTO', 'status', 'referencia', 'bank_reference', 'value_date', 'extra'], mapping as never),
      {
        reference: 2,
        bank_reference: 3,
        amount: 0,
        status: 1,
        value_date: 4,
      },
    );
  });

  it('refuses an unknown column, a pair without a name, a column mapped twice, two columns on one name', () => {
    assert.match(parseColumnMapping('colour:Color') as string, /not a statement column/);
    assert.match(parseColumnMapping('amount') as string, /give the header name/);
    assert.match(parseColumnMapping('amount:A,amount:B') as string, /mapped twice/);
    assert.match(parseColumnMapping('amount:status') as string, /two columns are mapped to one header name/);
    assert.match(
      columnPositions(['reference', 'amount', 'amount', 'status', 'value_date', 'bank_reference'], STANDARD) as string,
      /twice/,
    );
    assert.match(
      columnPositions(['reference', 'amount'], STANDARD) as string,
      /lacks bank_reference, status, value_date/,
    );
  });
});

describe('a line against our payment', () => {
  const read = (cells: string[]) => {
    const l = line(cells);
    if (typeof l === 'string') throw new Error(l);
    return l;
  };
  const kinds = (cells: string[], ours?: StatementPayment) => compareLine(read(cells), ours).map((m) => m.kind);

  it('agrees: settled with settled, and with a payment returned since; failed with failed; reversed with reversed', () => {
    assert.deepEqual(kinds([ID, '004512398871', '1000000', 'settled', DAY], payment()), []);
    assert.deepEqual(kinds([ID, '004512398871', '1000000', 'settled', DAY], payment({ status: 'reversed' })), []);
    assert.deepEqual(
      kinds([ID, '', '1000000', 'failed', DAY], payment({ status: 'failed', bank_reference: null })),
      [],
    );
    assert.deepEqual(kinds([ID, '004512398871', '1000000', 'reversed', DAY], payment({ status: 'reversed' })), []);
  });

  it('disagrees in each way, and in several at once', () => {
    assert.deepEqual(kinds([ID, '004512398871', '1000000', 'settled', DAY]), ['unknown_reference']);
    assert.deepEqual(kinds([ID, '004512398871', '1000001', 'settled', DAY], payment()), ['amount_mismatch']);
    assert.deepEqual(kinds([ID, '000000000042', '1000000', 'settled', DAY], payment()), ['bank_reference_mismatch']);
    assert.deepEqual(kinds([ID, '004512398871', '1000000', 'reversed', DAY], payment()), ['status_mismatch']);
    assert.deepEqual(
      kinds([ID, '004512398871', '1000000', 'settled', DAY], payment({ status: 'unknown', bank_reference: null })),
      ['status_mismatch'],
    );
    assert.deepEqual(kinds([ID, '000000000042', '7', 'failed', DAY], payment()), [
      'status_mismatch',
      'amount_mismatch',
      'bank_reference_mismatch',
    ]);
  });

  it('keeps both sides, amounts as strings of minor units', () => {
    const [mismatch] = compareLine(read([ID, '004512398871', '1000001', 'settled', DAY]), payment());
    assert.deepEqual(
      [mismatch!.ours.amount, mismatch!.theirs.amount, mismatch!.theirs.line],
      ['1000000', '1000001', '2'],
    );
  });
});

describe('identities', () => {
  it('one anomaly key per rail, day, reference and kind', () => {
    const key = statementDedupKey('amount_mismatch', 'sandbox', DAY, ID);
    assert.equal(statementDedupKey('amount_mismatch', 'sandbox', DAY, ID), key);
    assert.match(key, /^statement_amount_mismatch:[0-9a-f]{64}$/);
    for (const other of [
      statementDedupKey('status_mismatch', 'sandbox', DAY, ID),
      statementDedupKey('amount_mismatch', 'banco-x', DAY, ID),
      statementDedupKey('amount_mismatch', 'sandbox', '2026-12-02', ID),
      statementDedupKey('amount_mismatch', 'sandbox', DAY, `${ID}x`),
    ]) {
      assert.notEqual(other, key);
    }
  });

  it('a mismatch cursor comes back as its place; anything else is a 400 naming the cursor', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2_000_000_000 }), (seq) =>
        assert.equal(mismatchesAfter(mismatchCursor(seq)), seq),
      ),
    );
    assert.equal(mismatchesAfter(undefined), 0);
    for (const bad of [
      '',
      'abc',
      Buffer.from('m1:0').toString('base64url'),
      Buffer.from('k1:5').toString('base64url'),
    ]) {
      assert.throws(
        () => mismatchesAfter(bad),
        (error: { code?: string }) => error.code === 'validation_failed',
      );
    }
  });
});
