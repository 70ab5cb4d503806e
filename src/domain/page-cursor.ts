/**
 * Opaque keyset cursors for lists ordered by (created_at DESC, id DESC): the
 * position is the last row's creation time and id, so rows inserted while a caller pages never
 * shift a page, as an offset would.
 *
 * PostgreSQL keeps microseconds and a JS Date only milliseconds, so the time travels as the
 * microsecond epoch (read by the repository as a bigint) and goes back to SQL as an exact
 * timestamp literal; a millisecond round-trip would skip or repeat rows created in the same ms.
 */

import { validationFailed } from './errors.ts';

export interface PagePosition {
  createdAtUs: bigint;
  id: string;
}

const VERSION = 'k1';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MICROS = /^[0-9]{1,18}$/;
const CURSOR_LENGTH_MAX = 200;
// 9999-12-31T23:59:59.999999Z: the last instant an ISO timestamp (and so this encoding) can name.
const MAX_TIMESTAMP_US = 253402300799999999n;

export function encodeCursor(position: PagePosition): string {
  return Buffer.from(`${VERSION}:${position.createdAtUs}:${position.id}`, 'utf8').toString('base64url');
}

/** undefined for anything that is not a cursor this service issued. */
export function decodeCursor(cursor: string): PagePosition | undefined {
  if (cursor.length === 0 || cursor.length > CURSOR_LENGTH_MAX || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const parts = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  if (parts.length !== 3) return undefined;
  const [version, micros, id] = parts as [string, string, string];
  if (version !== VERSION || !MICROS.test(micros) || !UUID.test(id)) return undefined;
  const createdAtUs = BigInt(micros);
  if (createdAtUs > MAX_TIMESTAMP_US) return undefined;
  return { createdAtUs, id };
}

/** The exact timestamp as ISO-8601 with 6 fractional digits, for a `$n::timestamptz` parameter. */
export function microsToTimestamp(createdAtUs: bigint): string {
  const ms = createdAtUs / 1000n;
  const micros = createdAtUs % 1000n;
  return new Date(Number(ms)).toISOString().replace('Z', `${micros.toString().padStart(3, '0')}Z`);
}

/** The position after which a page starts: none without a cursor, a 400 naming `cursor` for a foreign one. */
export function positionAfter(cursor: string | undefined): PagePosition | undefined {
  if (cursor === undefined) return undefined;
  const position = decodeCursor(cursor);
  if (!position)
    throw validationFailed([
      { field: 'cursor', message: 'must be the next_cursor of a previous page of this list, unchanged' },
    ]);
  return position;
}

/** A page out of the `limit + 1` rows a list read: its rows, whether more follow, and the next cursor. */
export function pageOf<Row extends { created_at_us: bigint; id: string }>(
  rows: Row[],
  limit: number,
): { rows: Row[]; hasMore: boolean; nextCursor: string | null } {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    rows: pageRows,
    hasMore,
    nextCursor: hasMore && last ? encodeCursor({ createdAtUs: last.created_at_us, id: last.id }) : null,
  };
}
