import { Params } from './sql-params.ts';
import type { Queryable } from '../database.ts';
import type { Metadata } from '../../domain/metadata.ts';
import type { Asset } from '../../domain/money.ts';
import type { Mode } from '../../domain/partition.ts';

export interface QuoteRow {
  tenant_id: string;
  mode: Mode;
  id: string;
  customer_id: string | null;
  fixed: 'deliver' | 'spend';
  spend_asset: Asset;
  spend_amount: bigint;
  deliver_asset: Asset;
  deliver_amount: bigint;
  fee_amount: bigint;
  rate_value: string | null;
  rate_market: string | null;
  spread_bps: number | null;
  expires_at: Date;
  created_at: Date;
  consumed_at: Date | null;
  payment_id: string | null;
  metadata: Metadata;
}

const COLUMNS = `tenant_id, mode, id, customer_id, fixed, spend_asset, spend_amount, deliver_asset, deliver_amount,
  fee_amount, rate_value, rate_market, spread_bps, expires_at, created_at, consumed_at, payment_id, metadata`;

export type NewQuote = Omit<QuoteRow, 'consumed_at' | 'payment_id'>;

export async function insertQuote(db: Queryable, quote: NewQuote): Promise<QuoteRow> {
  const p = new Params();
  const { rows } = await db.query<QuoteRow>(
    `INSERT INTO quotes (tenant_id, mode, id, customer_id, fixed, spend_asset, spend_amount, deliver_asset, deliver_amount,
       fee_amount, rate_value, rate_market, spread_bps, expires_at, created_at, metadata)
     VALUES (${p.add(quote.tenant_id)}, ${p.add(quote.mode)}, ${p.add(quote.id)}, ${p.add(quote.customer_id)}, ${p.add(quote.fixed)},
       ${p.add(quote.spend_asset)}, ${p.add(quote.spend_amount)}, ${p.add(quote.deliver_asset)}, ${p.add(quote.deliver_amount)},
       ${p.add(quote.fee_amount)}, ${p.add(quote.rate_value)}, ${p.add(quote.rate_market)}, ${p.add(quote.spread_bps)},
       ${p.add(quote.expires_at)}, ${p.add(quote.created_at)}, ${p.add(JSON.stringify(quote.metadata))}) RETURNING ${COLUMNS}`,
    p.values,
  );
  return rows[0]!;
}

/** Many quotes in one statement (a payout batch's deliver-mode items), in the order given. */
export async function insertQuotes(db: Queryable, quotes: readonly NewQuote[]): Promise<void> {
  if (quotes.length === 0) return;
  const p = new Params();
  const col = <T>(pick: (q: NewQuote) => T) => quotes.map(pick);
  const rows = p.unnest({
    tenant_id: ['uuid', col((q) => q.tenant_id)],
    mode: ['text', col((q) => q.mode)],
    id: ['uuid', col((q) => q.id)],
    customer_id: ['uuid', col((q) => q.customer_id)],
    fixed: ['text', col((q) => q.fixed)],
    spend_asset: ['text', col((q) => q.spend_asset)],
    spend_amount: ['bigint', col((q) => q.spend_amount.toString())],
    deliver_asset: ['text', col((q) => q.deliver_asset)],
    deliver_amount: ['bigint', col((q) => q.deliver_amount.toString())],
    fee_amount: ['bigint', col((q) => q.fee_amount.toString())],
    rate_value: ['text', col((q) => q.rate_value)],
    rate_market: ['text', col((q) => q.rate_market)],
    spread_bps: ['integer', col((q) => q.spread_bps)],
    expires_at: ['timestamptz', col((q) => q.expires_at)],
    created_at: ['timestamptz', col((q) => q.created_at)],
    metadata: ['jsonb', col((q) => JSON.stringify(q.metadata))],
  });
  await db.query(
    `INSERT INTO quotes (tenant_id, mode, id, customer_id, fixed, spend_asset, spend_amount, deliver_asset, deliver_amount,
       fee_amount, rate_value, rate_market, spread_bps, expires_at, created_at, metadata)
     SELECT tenant_id, mode, id, customer_id, fixed, spend_asset, spend_amount, deliver_asset, deliver_amount,
       fee_amount, rate_value, rate_market, spread_bps, expires_at, created_at, metadata FROM ${rows}`,
    p.values,
  );
}

export async function findQuote(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  id: string,
): Promise<QuoteRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<QuoteRow>(
    `SELECT ${COLUMNS} FROM quotes WHERE tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)} AND id = ${p.add(id)}`,
    p.values,
  );
  return rows[0];
}

/**
 * Removes quotes a payout batch wrote for items its transactions then refused (never consumed, never
 * shown to the client: a batch item's quote is the batch's own). A consumed quote is never removed.
 */
export async function deleteUnusedBatchQuotes(db: Queryable, tenantId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const p = new Params();
  await db.query(
    `DELETE FROM quotes WHERE tenant_id = ${p.add(tenantId)} AND id = ANY(${p.add(ids)}::uuid[]) AND consumed_at IS NULL AND payment_id IS NULL`,
    p.values,
  );
}
