import type { Database } from '../db/database.ts';
import { listStatement, type StatementFilter, type StatementPayment } from '../db/repositories/statement.ts';
import { isValidDate, nextDate, startOfBusinessDate } from '../domain/caracas-time.ts';
import { decodeCursor, encodeCursor, type PagePosition } from '../domain/page-cursor.ts';
import type { PaymentStatus } from '../domain/payment-state.ts';
import { validationFailed, type FieldError } from '../domain/errors.ts';
import type { Partition } from '../domain/partition.ts';
import { InvariantError } from '../domain/assert.ts';

/** The statement filters as the caller sent them. */
export interface StatementQuery {
  /** First Caracas day (YYYY-MM-DD) on which the payments settled, inclusive. */
  from?: string;
  /** Last Caracas day (YYYY-MM-DD) on which the payments settled, inclusive. */
  to?: string;
  status?: PaymentStatus;
  beneficiaryId?: string;
  customerId?: string;
  /** Only the payments this payout batch created. */
  batchId?: string;
  /** With `metadata_value`: one key of the payout's metadata, matched exactly. */
  metadata_key?: string;
  metadata_value?: string;
  /** Created at or after this instant (ISO 8601). */
  createdFrom?: string;
  /** Created before this instant (ISO 8601). */
  createdBefore?: string;
}

export interface StatementPage {
  rows: StatementPayment[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** Rows per query of an export: memory stays at one batch whatever the statement's size. */
const EXPORT_BATCH_ROWS = 1000;

// Calendar dates whose Caracas day boundaries the time functions compute exactly (years below 100
// would be read as 19xx by Date.UTC; the day after 9999-12-31 has no YYYY-MM-DD form).
const DATE_MIN = '1970-01-01';
const DATE_MAX = '9999-12-30';

function dateError(field: 'from' | 'to', value: string | undefined): FieldError | undefined {
  if (value === undefined) return undefined;
  if (!isValidDate(value)) return { field, message: 'must be a calendar date YYYY-MM-DD, such as 2026-03-01' };
  if (value < DATE_MIN || value > DATE_MAX) return { field, message: `must be a date from ${DATE_MIN} to ${DATE_MAX}` };
  return undefined;
}

// The instants `createdFrom`/`createdBefore` accept: the days' range above. The date-time format
// admits what a JavaScript Date cannot hold (a leap second, 23:59:60) or the database cannot (year
// 0000, a year past 9999 once the offset is applied): those are the caller's error, not a 500.
const INSTANT_MIN = Date.parse(`${DATE_MIN}T00:00:00Z`);
const INSTANT_MAX = Date.parse(`${DATE_MAX}T00:00:00Z`);

function instantOf(
  field: 'createdFrom' | 'createdBefore',
  value: string | undefined,
  errors: FieldError[],
): Date | undefined {
  if (value === undefined) return undefined;
  const at = new Date(value);
  if (at.getTime() >= INSTANT_MIN && at.getTime() <= INSTANT_MAX) return at;
  errors.push({
    field,
    message: `must be an instant from ${DATE_MIN}T00:00:00Z to ${DATE_MAX}T00:00:00Z (RFC 3339, no leap second), such as 2026-03-01T04:00:00.000Z`,
  });
  return undefined;
}

/**
 * The repository filter of a query, or 400 `validation_failed` naming every invalid parameter.
 * `from`/`to` are whole days in America/Caracas on settled_at: the range is
 * [start of `from`, start of the day after `to`), so a payment created at 23:59 and settled at 00:01
 * belongs to the second day.
 */
export function statementFilter(query: StatementQuery): StatementFilter {
  const errors = [dateError('from', query.from), dateError('to', query.to)].filter(
    (e): e is FieldError => e !== undefined,
  );
  if (errors.length === 0 && query.from !== undefined && query.to !== undefined && query.from > query.to) {
    errors.push({ field: 'from', message: `must be on or before \`to\` (${query.to})` });
  }
  if (query.metadata_key !== undefined && query.metadata_value === undefined) {
    errors.push({ field: 'metadata_value', message: 'is required with `metadata_key`: the value to match' });
  }
  if (query.metadata_value !== undefined && query.metadata_key === undefined) {
    errors.push({ field: 'metadata_key', message: 'is required with `metadata_value`: the key to match' });
  }
  const createdFrom = instantOf('createdFrom', query.createdFrom, errors);
  const createdBefore = instantOf('createdBefore', query.createdBefore, errors);
  if (createdFrom && createdBefore && !(createdFrom.getTime() < createdBefore.getTime())) {
    errors.push({ field: 'createdFrom', message: `must be before \`createdBefore\` (${query.createdBefore})` });
  }
  if (errors.length > 0) throw validationFailed(errors);
  return {
    createdFrom,
    createdBefore,
    status: query.status,
    beneficiaryId: query.beneficiaryId,
    customerId: query.customerId,
    batchId: query.batchId,
    metadata:
      query.metadata_key === undefined || query.metadata_value === undefined
        ? undefined
        : { key: query.metadata_key, value: query.metadata_value },
    settledFrom: query.from === undefined ? undefined : startOfBusinessDate(query.from),
    settledBefore: query.to === undefined ? undefined : startOfBusinessDate(nextDate(query.to)),
  };
}

function cursorPosition(cursor: string | undefined): PagePosition | undefined {
  if (cursor === undefined) return undefined;
  const position = decodeCursor(cursor);
  if (!position)
    throw validationFailed([
      { field: 'cursor', message: 'must be the next_cursor of a previous page of this list, unchanged' },
    ]);
  return position;
}

function positionOf(row: StatementPayment): PagePosition {
  return { createdAtUs: row.created_at_us, id: row.id };
}

/** Reads the statement: pages for the API, batches for the CSV export. */
export class StatementService {
  constructor(private readonly db: Database) {}

  async page(partition: Partition, query: StatementQuery & { limit: number; cursor?: string }): Promise<StatementPage> {
    const filter = statementFilter(query);
    const after = cursorPosition(query.cursor);
    const rows = await listStatement(this.db, partition.tenantId, partition.mode, filter, {
      limit: query.limit,
      after,
    });
    const hasMore = rows.length > query.limit;
    const pageRows = hasMore ? rows.slice(0, query.limit) : rows;
    const last = pageRows[pageRows.length - 1];
    return { rows: pageRows, hasMore, nextCursor: hasMore && last ? encodeCursor(positionOf(last)) : null };
  }

  /**
   * Every payment of the statement, in the order of its pages, as batches read one query at a
   * time: the next batch is only read when the consumer asks for it, so a slow download holds one
   * batch and no database connection or transaction between batches. The filter is validated
   * before anything is read (`statementFilter`).
   */
  async *exportBatches(
    partition: Partition,
    filter: StatementFilter,
    batchRows = EXPORT_BATCH_ROWS,
  ): AsyncGenerator<StatementPayment[]> {
    let after: PagePosition | undefined;
    for (;;) {
      const rows = await listStatement(this.db, partition.tenantId, partition.mode, filter, {
        limit: batchRows,
        after,
      });
      const batch = rows.length > batchRows ? rows.slice(0, batchRows) : rows;
      if (batch.length > 0) yield batch;
      if (rows.length <= batchRows) return;
      const next = positionOf(batch[batch.length - 1]!);
      // The keyset only moves down; anything else would loop or repeat rows.
      if (
        after &&
        !(next.createdAtUs < after.createdAtUs || (next.createdAtUs === after.createdAtUs && next.id < after.id))
      ) {
        throw new InvariantError('statement export cursor did not advance');
      }
      after = next;
    }
  }
}
