// The console's CSV reader (console/csv.ts) reads what csv-parse, the server's parser, reads: checked
// on generated files (quotes, commas, line breaks of both kinds inside fields, a byte order mark),
// and it refuses, with the line, what RFC 4180 does not allow.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { CsvSyntaxError, parseCsv } from '../../console/csv.ts';

const fieldsOf = (text: string) => parseCsv(text).map((record) => record.fields);

/** A field as a writer may put it: quoted when it must be, and sometimes when it need not. */
const written = (value: string, quote: boolean) =>
  quote || /[",\r\n]/.test(value) || value === '' ? `"${value.replace(/"/g, '""')}"` : value;

const fileArbitrary = fc
  .record({
    width: fc.integer({ min: 1, max: 5 }),
    height: fc.integer({ min: 1, max: 6 }),
    text: fc.array(
      fc.oneof(
        fc.string({ maxLength: 8 }),
        fc.constantFrom(',', '"', '\n', '\r\n', '\r', 'ñ', 'María Pérez', '1500.50', ' '),
      ),
      {
        minLength: 30,
        maxLength: 30,
      },
    ),
    quotes: fc.array(fc.boolean(), { minLength: 30, maxLength: 30 }),
    // One kind of line break a file (csv-parse keeps to the first it sees; ours takes any, see below).
    lineBreak: fc.constantFrom('\n', '\r\n'),
    finalBreak: fc.boolean(),
    bom: fc.boolean(),
  })
  .map(({ width, height, text, quotes, lineBreak, finalBreak, bom }) => {
    const records = Array.from({ length: height }, (_, r) =>
      Array.from({ length: width }, (_, c) => text[(r * width + c) % 30]!),
    );
    const lines = records.map((record, r) =>
      record.map((value, c) => written(value, quotes[(r * width + c) % 30]!)).join(','),
    );
    const body = lines.map((line, r) => line + (r < lines.length - 1 || finalBreak ? lineBreak : '')).join('');
    return { records, file: (bom ? '\uFEFF' : '') + body };
  });

describe('the console CSV reader', () => {
  it('reads every generated file as csv-parse does, and as it was written', () => {
    fc.assert(
      fc.property(fileArbitrary, ({ records, file }) => {
        const ours = fieldsOf(file);
        assert.deepEqual(ours, parse(file, { bom: true, relax_column_count: true }));
        assert.deepEqual(ours, records);
      }),
      { numRuns: 500 },
    );
  });

  it('reads quoted commas, doubled quotes, line breaks in a field and empty fields', () => {
    assert.deepEqual(fieldsOf('a,b\r\n"1,5","say ""hi"""\r\n"two\nlines",\n'), [
      ['a', 'b'],
      ['1,5', 'say "hi"'],
      ['two\nlines', ''],
    ]);
    assert.deepEqual(fieldsOf('a,"",c'), [['a', '', 'c']]);
    // A file whose lines end in both ways (rows pasted from two editors) is read, not refused.
    assert.deepEqual(fieldsOf('a\r\nb\nc\rd'), [['a'], ['b'], ['c'], ['d']]);
    assert.deepEqual(fieldsOf('\uFEFFreference\nx'), [['reference'], ['x']]);
    assert.deepEqual(fieldsOf(''), []);
  });

  it('gives each record the line it starts on', () => {
    assert.deepEqual(
      parseCsv('h\n"a\nb"\nc\r\nd').map((record) => record.line),
      [1, 2, 4, 5],
    );
  });

  it('refuses what RFC 4180 does not allow, naming the line', () => {
    const refused = (text: string, line: number, problem: RegExp) =>
      assert.throws(
        () => parseCsv(text),
        (error: unknown) => error instanceof CsvSyntaxError && error.line === line && problem.test(error.message),
        text,
      );
    refused('a,b\n1,"2', 2, /never ends/);
    refused('a\nx"y', 2, /quote inside a field/);
    refused('a\n"x"y', 2, /after the closing quote/);
    refused('a\n"x\n\ny" z', 4, /after the closing quote/);
  });
});
