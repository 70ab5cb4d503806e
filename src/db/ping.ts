import type { Queryable } from './database.ts';

/** The cheapest question the database can answer: resolves when it is up and serving queries. */
export async function ping(db: Pick<Queryable, 'query'>): Promise<void> {
  await db.query('SELECT 1');
}
