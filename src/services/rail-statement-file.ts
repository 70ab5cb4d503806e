// A statement file as it arrives: read from the request stream line by line (csv-parse), every line
// checked, the SHA-256 of the bytes computed on the way, and the checked lines written to a spool file
// on disk, never held in memory. Only a file read to its end without a fault is matched, so a bad line
// anywhere stores nothing; and a file posted again is recognised by its hash before any matching.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CsvError, parse } from 'csv-parse';
import { ApiError } from '../domain/errors.ts';
import {
  columnPositions,
  readLine,
  type ColumnMapping,
  type StatementColumn,
  type StatementLine,
} from '../domain/rail-statement.ts';

/**
 * The largest statement accepted, in bytes. A line of a statement is about 100 bytes, so 100,000
 * payments a day (the largest day we plan for) is about 10 MB; four times that leaves room for wider
 * bank formats. The body is never held whole, so this bounds the spool on disk and the work, not memory.
 */
export const STATEMENT_BYTES_MAX = 40 * 1024 * 1024;
/** The most data lines one statement may have (the header not counted): the planned day ×5. */
export const STATEMENT_LINES_MAX = 500_000;
/** The longest line: a statement line is five short columns; anything longer is not one. */
const LINE_BYTES_MAX = 4096;

/** A statement read to its end: where its checked lines wait, and what identifies the file. */
export interface SpooledStatement {
  sha256: string;
  bytes: number;
  lines: number;
  /** The checked lines, one JSON array per line, in file order. */
  file: string;
  /** Removes the spool; call it whatever happened. */
  discard(): Promise<void>;
}

export function statementMalformed(line: number, problem: string): ApiError {
  return new ApiError('statement_malformed', `Line ${line}: ${problem}. Nothing was stored.`, { line, problem });
}

/** Counts and hashes the bytes as they pass, and stops a body over STATEMENT_BYTES_MAX. */
function meter(hash: ReturnType<typeof createHash>, seen: { bytes: number }): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      seen.bytes += chunk.length;
      if (seen.bytes > STATEMENT_BYTES_MAX)
        return done(
          new ApiError(
            'payload_too_large',
            `A statement is at most ${STATEMENT_BYTES_MAX / 1024 / 1024} MiB; nothing was stored.`,
          ),
        );
      hash.update(chunk);
      done(null, chunk);
    },
  });
}

/** The header, then each line checked and written out as JSON (one per line). */
function checker(mapping: ColumnMapping, day: string, counted: { lines: number }): Transform {
  let positions: Record<StatementColumn, number> | undefined;
  return new Transform({
    writableObjectMode: true,
    transform({ record, info }: { record: string[]; info: { lines: number } }, _encoding, done) {
      if (positions === undefined) {
        const found = columnPositions(record, mapping);
        if (typeof found === 'string') return done(statementMalformed(info.lines, found));
        positions = found;
        return done();
      }
      counted.lines += 1;
      if (counted.lines > STATEMENT_LINES_MAX)
        return done(statementMalformed(info.lines, `a statement has at most ${STATEMENT_LINES_MAX} lines`));
      const line = readLine(record, positions, day, info.lines);
      if (typeof line === 'string') return done(statementMalformed(info.lines, line));
      done(
        null,
        `${JSON.stringify([line.line, line.reference, line.bankReference, line.amount.toString(), line.status])}\n`,
      );
    },
    flush(done) {
      done(
        positions === undefined
          ? statementMalformed(1, 'the file is empty: a statement starts with its header line')
          : undefined,
      );
    },
  });
}

/** The request stream's errors when the client goes away mid-upload (no answer reaches it; nothing went wrong here). */
const UPLOAD_CUT = new Set(['ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE', 'ECONNABORTED']);

/**
 * A fault of the CSV itself (an unclosed quote, a line with another number of columns) as a 400 naming
 * its line; an upload cut short as a 400 too, not as a fault of ours.
 */
function csvFault(error: unknown): unknown {
  const code = (error as { code?: unknown })?.code;
  if ((typeof code === 'string' && UPLOAD_CUT.has(code)) || (error as Error)?.message === 'aborted') {
    return new ApiError(
      'malformed_request',
      'The statement upload ended before the whole body arrived; nothing was stored.',
    );
  }
  if (!(error instanceof CsvError)) return error;
  const line = (error as CsvError & { lines?: number }).lines ?? 1;
  return statementMalformed(line, `not a well-formed CSV line (${error.code})`);
}

/**
 * Reads the whole body: its hash and size, every line checked against the header and `mapping`,
 * the checked lines spooled to a temporary file. Throws 400 `statement_malformed` (with the line) or
 * 413 `payload_too_large`, having kept nothing.
 */
export async function spoolStatement(body: Readable, mapping: ColumnMapping, day: string): Promise<SpooledStatement> {
  const dir = await mkdtemp(path.join(tmpdir(), 'bolivar-statement-'));
  const discard = () => rm(dir, { recursive: true, force: true });
  const file = path.join(dir, 'lines.jsonl');
  const hash = createHash('sha256');
  const seen = { bytes: 0 };
  const counted = { lines: 0 };
  try {
    await pipeline(
      body,
      meter(hash, seen),
      parse({ bom: true, info: true, skip_empty_lines: true, max_record_size: LINE_BYTES_MAX }),
      checker(mapping, day, counted),
      createWriteStream(file),
    );
  } catch (error) {
    await discard();
    throw csvFault(error);
  }
  return { sha256: hash.digest('hex'), bytes: seen.bytes, lines: counted.lines, file, discard };
}

/** The spooled lines again, in batches of at most `size`, read from disk as they are needed. */
export async function* spooledBatches(spool: SpooledStatement, size: number): AsyncGenerator<StatementLine[]> {
  const input = createReadStream(spool.file);
  const reader = createInterface({ input, crlfDelay: Infinity });
  let batch: StatementLine[] = [];
  try {
    for await (const text of reader) {
      const [line, reference, bankReference, amount, status] = JSON.parse(text) as [
        number,
        string,
        string,
        string,
        StatementLine['status'],
      ];
      batch.push({ line, reference, bankReference, amount: BigInt(amount), status });
      if (batch.length >= size) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  } finally {
    reader.close();
    input.destroy();
  }
}
