import type { Queryable } from '../database.ts';
import { Params } from './sql-params.ts';

export interface StoredRate {
  asset: string;
  market_text: string;
  updated_at: Date;
}

export async function findRate(db: Queryable, asset: string): Promise<StoredRate | undefined> {
  const p = new Params();
  const { rows } = await db.query<StoredRate>(
    `SELECT asset, market_text, updated_at FROM fx_rates WHERE asset = ${p.add(asset)}`,
    p.values,
  );
  return rows[0];
}

/** One asset's rate (undefined: none yet), its row locked until the transaction ends. */
export async function lockRate(tx: Queryable, asset: string): Promise<StoredRate | undefined> {
  const p = new Params();
  const { rows } = await tx.query<StoredRate>(
    `SELECT asset, market_text, updated_at FROM fx_rates WHERE asset = ${p.add(asset)} FOR UPDATE`,
    p.values,
  );
  return rows[0];
}

export async function listRates(db: Queryable): Promise<StoredRate[]> {
  const { rows } = await db.query<StoredRate>('SELECT asset, market_text, updated_at FROM fx_rates ORDER BY asset');
  return rows;
}

export async function upsertRate(db: Queryable, asset: string, market: string, at: Date): Promise<StoredRate> {
  const p = new Params();
  const marketText = p.add(market);
  const { rows } = await db.query<StoredRate>(
    `INSERT INTO fx_rates (asset, market, market_text, updated_at) VALUES (${p.add(asset)}, ${marketText}::numeric, ${marketText}, ${p.add(at)})
     ON CONFLICT (asset) DO UPDATE SET market = EXCLUDED.market, market_text = EXCLUDED.market_text, updated_at = EXCLUDED.updated_at
     RETURNING asset, market_text, updated_at`,
    p.values,
  );
  return rows[0]!;
}

/** A new database's default rates (seeded by its migrations, not set by anyone since) dated now. */
export async function redateSeededRates(db: Queryable): Promise<void> {
  await db.query('UPDATE fx_rates SET updated_at = now()');
}
