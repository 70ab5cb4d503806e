// What a test reads of the rail inbox.
import type { Queryable } from '../../src/db/database.ts';
import { Params } from '../../src/db/repositories/sql-params.ts';

/** How many events of a rail the inbox holds (acknowledged or not). */
export async function countRailInboxEvents(db: Queryable, rail: string): Promise<number> {
  const p = new Params();
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM rail_inbox WHERE rail = ${p.add(rail)}`,
    p.values,
  );
  return rows[0]?.n ?? 0;
}
