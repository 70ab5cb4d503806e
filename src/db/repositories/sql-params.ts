// Building a statement's numbered parameters by what they hold, and the newest-first keyset page that
// the admin and statement lists share.
import { microsToTimestamp, type PagePosition } from '../../domain/page-cursor.ts';
import type { Queryable } from '../database.ts';

/** Numbered parameters for one statement: `add` returns the placeholder of a new value. */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * One page newest first: at most `limit + 1` rows of `from` matching `where`, ordered by (`time`, id)
 * descending and strictly after `after` (so the caller knows whether another page follows). Each row
 * also carries `<time>_us`, the microseconds of `time` for the next cursor (extract(epoch …) is
 * numeric on PostgreSQL 14+, so the value is exact).
 */
export async function newestFirst<T>(
  db: Queryable,
  query: { columns: string; from: string; time: string; params: Params; where: string[]; limit: number; after?: PagePosition },
): Promise<T[]> {
  const { columns, from, time, params, limit, after } = query;
  const where = [...query.where];
  if (after) where.push(`(${time}, id) < (${params.add(microsToTimestamp(after.createdAtUs))}::timestamptz, ${params.add(after.id)}::uuid)`);
  const { rows } = await db.query<T>(
    `SELECT ${columns}, (extract(epoch FROM ${time}) * 1000000)::bigint AS ${time}_us
       FROM ${from}
      ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY ${time} DESC, id DESC
      LIMIT ${params.add(limit + 1)}`,
    params.values,
  );
  return rows;
}
