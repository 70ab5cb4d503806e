// The service's own one-off facts (app_state): so far, that the first start has bootstrapped.
import type { Queryable } from '../database.ts';
import { Params } from './sql-params.ts';

/** true once the first start has created the sandbox tenant (it never runs twice). */
export async function isBootstrapped(tx: Queryable): Promise<boolean> {
  const { rowCount } = await tx.query(`SELECT 1 FROM app_state WHERE key = 'bootstrap'`);
  return rowCount > 0;
}

/** Records, in the bootstrap's own transaction, that the first start has run and which tenant it made. */
export async function recordBootstrap(tx: Queryable, bootstrap: { tenantId: string; at: Date }): Promise<void> {
  const p = new Params();
  const value = p.add(JSON.stringify({ tenantId: bootstrap.tenantId, at: bootstrap.at.toISOString() }));
  await tx.query(`INSERT INTO app_state (key, value) VALUES ('bootstrap', ${value})`, p.values);
}
