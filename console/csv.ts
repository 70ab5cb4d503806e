// RFC 4180 CSV, read in the browser: fields separated by commas, records by CRLF (LF and CR alone
// too, as spreadsheets write them), a field in double quotes may hold commas, line breaks and "" for
// one quote. A quote inside an unquoted field, or text after a closing quote, is an error rather than
// a guess: a payroll file that is not what it seems is refused, never read some other way.
// Pure functions, no DOM: unit-tested in Node against csv-parse, the server's parser.

export interface CsvRecord {
  fields: string[];
  /** The line of the file the record starts on (the first line is 1). */
  line: number;
}

export class CsvSyntaxError extends Error {
  constructor(
    readonly line: number,
    problem: string,
  ) {
    super(`line ${line}: ${problem}`);
  }
}

const QUOTE = '"';

/** The records of `text` (a UTF-8 byte order mark is dropped; a line break at the end ends nothing). */
export function parseCsv(text: string): CsvRecord[] {
  const input = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const records: CsvRecord[] = [];
  let fields: string[] = [];
  let field = '';
  let line = 1;
  let recordLine = 1;
  let i = 0;
  const endRecord = () => {
    fields.push(field);
    records.push({ fields, line: recordLine });
    fields = [];
    field = '';
  };
  while (i < input.length) {
    const char = input[i]!;
    if (char === QUOTE && field === '') {
      const quoted = readQuoted(input, i, line);
      field = quoted.value;
      line = quoted.line;
      i = quoted.next;
      const after = input[i];
      if (after !== undefined && after !== ',' && after !== '\n' && after !== '\r')
        throw new CsvSyntaxError(line, 'text after the closing quote of a field');
      continue;
    }
    if (char === QUOTE)
      throw new CsvSyntaxError(
        line,
        'a quote inside a field that does not start with one (quote the whole field and double the quote)',
      );
    if (char === ',') {
      fields.push(field);
      field = '';
      i += 1;
    } else if (char === '\n' || char === '\r') {
      endRecord();
      i += char === '\r' && input[i + 1] === '\n' ? 2 : 1;
      line += 1;
      recordLine = line;
    } else {
      field += char;
      i += 1;
    }
  }
  if (i > 0 && !/[\r\n]$/.test(input)) endRecord();
  return records;
}

/** A quoted field from its opening quote at `start`: its value, where reading goes on, the line it ends on. */
function readQuoted(input: string, start: number, startLine: number): { value: string; next: number; line: number } {
  let value = '';
  let line = startLine;
  let i = start + 1;
  for (;;) {
    const close = input.indexOf(QUOTE, i);
    if (close === -1) throw new CsvSyntaxError(startLine, 'a quoted field that never ends (a missing closing quote)');
    const chunk = input.slice(i, close);
    line += (chunk.match(/\r\n|\r|\n/g) ?? []).length;
    value += chunk;
    if (input[close + 1] === QUOTE) {
      value += QUOTE;
      i = close + 2;
    } else {
      return { value, next: close + 1, line };
    }
  }
}
