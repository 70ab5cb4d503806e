// Building a statement's numbered parameters by what they hold (each named where it is used), and the
// newest-first keyset page that the admin and statement lists share.
import { microsToTimestamp, type PagePosition } from '../../domain/page-cursor.ts';
import type { Queryable } from '../database.ts';

/** Numbered parameters for one statement: `add` returns the placeholder of a new value. */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }

  /**
   * Rows from one array parameter per column, each column named where its values are given:
   * `unnest($i::type[], …) AS alias(column, …)`, `WITH ORDINALITY` adding the row's position as `n`.
   * A column's values may be a placeholder already added (a string), for an array the statement also
   * uses elsewhere. A statement built from the same columns in the same order always has the same
   * text (one prepared statement, whatever the arrays hold).
   */
  unnest(
    columns: Record<string, readonly [type: string, values: readonly unknown[] | string]>,
    options: { alias?: string; ordinality?: boolean } = {},
  ): string {
    const names = Object.keys(columns);
    const arrays = names.map((name) => {
      const [type, values] = columns[name]!;
      return `${typeof values === 'string' ? values : this.add(values)}::${type}[]`;
    });
    const ordinality = options.ordinality === true;
    return `unnest(${arrays.join(', ')})${ordinality ? ' WITH ORDINALITY' : ''} AS ${options.alias ?? 'v'}(${[...names, ...(ordinality ? ['n'] : [])].join(', ')})`;
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
  query: {
    columns: string;
    from: string;
    time: string;
    params: Params;
    where: string[];
    limit: number;
    after?: PagePosition;
  },
): Promise<T[]> {
  const { columns, from, time, params, limit, after } = query;
  const where = [...query.where];
  if (after)
    where.push(
      `(${time}, id) < (${params.add(microsToTimestamp(after.createdAtUs))}::timestamptz, ${params.add(after.id)}::uuid)`,
    );
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
