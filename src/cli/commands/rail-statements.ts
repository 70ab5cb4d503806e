// A rail's statements: a bank's list of a day's transfers matched against our payments
// (docs/rail-statements.md), posted as a CSV file or pulled from a bank connector.
import { createReadStream, statSync } from 'node:fs';
import { Readable } from 'node:stream';
import { CliError, type Command } from '../command.ts';
import { given, int, text } from '../flags.ts';
import { listPages, pageFlags } from '../paging.ts';
import { ask } from '../service.ts';
import { RAIL } from './rails.ts';

/**
 * `rails statement import`: how long the whole upload and matching may take. A 100,000-line statement
 * (about 8 MB) takes seconds; the bound leaves room for the largest statement the service accepts.
 */
const STATEMENT_CALL_TIMEOUT_MS = 300_000;

/** The statement file as a stream the request sends as it reads it (never read whole). */
function statementFile(file: string): ReadableStream<Uint8Array> {
  try {
    if (!statSync(file).isFile()) throw new Error('not a file');
  } catch (error) {
    throw new CliError(`cannot read the statement file ${file}: ${(error as Error).message}`);
  }
  return Readable.toWeb(createReadStream(file)) as ReadableStream<Uint8Array>;
}

export const RAIL_STATEMENT_COMMANDS: Command[] = [
  {
    name: 'rails statement import',
    summary: "Match a rail's statement for a day against our payments (POST /v1/admin/rails/{rail}/statements)",
    details:
      'Sends the CSV file as it reads it and prints the statement with its counts by result (docs/rail-statements.md).\n' +
      'The same file for the same rail and day again prints the statement stored the first time; nothing new is stored.\n' +
      'A malformed file is refused with its line (400 statement_malformed) and nothing is stored.',
    flags: {
      rail: RAIL,
      day: {
        type: 'string',
        value: 'YYYY-MM-DD',
        required: true,
        description: "the statement's value date (America/Caracas)",
      },
      file: { type: 'string', value: 'PATH', required: true, description: 'the statement, CSV' },
      columns: {
        type: 'string',
        value: 'MAP',
        description: 'header names of a bank that names columns otherwise, e.g. reference:Referencia,amount:Monto',
      },
    },
    run: (v) => {
      const query = { day: given(v.day), columns: text(v.columns) };
      const csv = statementFile(given(v.file));
      return ask((admin) => admin.rails.statements.import(given(v.rail), csv, query), STATEMENT_CALL_TIMEOUT_MS);
    },
  },
  {
    name: 'rails statement list',
    summary: "List a rail's statements, newest first (GET /v1/admin/rails/{rail}/statements)",
    details: 'Prints one page with has_more and next_cursor, or every page with --all.',
    flags: { rail: RAIL, ...pageFlags('statements') },
    run: (v) => listPages((page) => ask((admin) => admin.rails.statements.listPage(given(v.rail), page)), v),
  },
  {
    name: 'rails statement show',
    summary: 'Show a rail statement with a page of its mismatches (GET /v1/admin/rails/{rail}/statements/{id})',
    details: 'Pass mismatches.next_cursor as --cursor for the next page of mismatches.',
    flags: {
      rail: RAIL,
      statement: {
        type: 'string',
        value: 'ID',
        required: true,
        description: 'the statement id (import and list print it)',
      },
      limit: { type: 'string', value: 'N', description: 'mismatches per page, 1 to 100 (default 25)' },
      cursor: { type: 'string', value: 'CURSOR', description: 'the mismatches.next_cursor of the previous page' },
    },
    run: (v) => {
      const query = { limit: int(v.limit, 'limit'), cursor: text(v.cursor) };
      return ask((admin) => admin.rails.statements.get(given(v.rail), given(v.statement), query));
    },
  },
  {
    name: 'rails statement pull',
    summary:
      "Pull a bank connector's statement of a day now and match it (POST /v1/admin/rails/{rail}/statement-pulls)",
    details:
      'What the worker does each morning for the day before (RAIL_STATEMENT_PULL_AT), now, for any day up to today.\n' +
      'Prints the pull: done with its statementId, retrying with lastError and nextAttemptAt, or gave_up (docs/rails.md).',
    flags: {
      rail: RAIL,
      day: { type: 'string', value: 'YYYY-MM-DD', required: true, description: 'the statement day (America/Caracas)' },
    },
    run: (v) =>
      ask((admin) => admin.rails.statements.pull(given(v.rail), { day: given(v.day) }), STATEMENT_CALL_TIMEOUT_MS),
  },
];
