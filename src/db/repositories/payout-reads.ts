import type { Mode } from '../../domain/api-keys.ts';
import type { Queryable } from '../database.ts';
import type { BeneficiaryRow } from './beneficiaries.ts';
import type { QuoteRow } from './quotes.ts';

const QUOTE = ['tenant_id', 'mode', 'id', 'customer_id', 'fixed', 'spend_asset', 'spend_amount', 'deliver_asset', 'deliver_amount',
  'fee_amount', 'rate_value', 'rate_market', 'spread_bps', 'expires_at', 'created_at', 'consumed_at', 'payment_id'] as const;
const BENEFICIARY = ['tenant_id', 'mode', 'id', 'full_name', 'national_id', 'bank_code', 'account_number', 'phone', 'asset', 'country',
  'instrument', 'status', 'payout_count', 'last_success_at', 'last_failure_reason', 'created_at'] as const;

const SQL = `SELECT v.n, ${QUOTE.map((c) => `q.${c} AS q_${c}`).join(', ')}, ${BENEFICIARY.map((c) => `b.${c} AS b_${c}`).join(', ')},
       (extract(epoch FROM b.created_at) * 1000000)::bigint AS b_created_at_us
  FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::uuid[]) WITH ORDINALITY AS v (tenant_id, mode, quote_id, beneficiary_id, n)
  LEFT JOIN LATERAL (SELECT * FROM quotes WHERE tenant_id = v.tenant_id AND mode = v.mode AND id = v.quote_id) q ON true
  LEFT JOIN LATERAL (SELECT * FROM beneficiaries WHERE tenant_id = v.tenant_id AND mode = v.mode AND id = v.beneficiary_id) b ON true`;
// LATERAL: one primary-key lookup per payout, never a scan of either table.

export interface PayoutReferences {
  tenantId: string;
  mode: Mode;
  quoteId: string;
  beneficiaryId: string | undefined;
}

/**
 * The rows payouts refer to, for many payouts in one round trip: each one's quote, and its
 * registered beneficiary when it names one. Either is undefined when it does not exist.
 */
export async function findQuotesAndBeneficiaries(
  db: Queryable,
  items: readonly PayoutReferences[],
): Promise<Array<{ quote?: QuoteRow; beneficiary?: BeneficiaryRow }>> {
  const { rows } = await db.query<Record<string, unknown>>(SQL, [
    items.map((i) => i.tenantId),
    items.map((i) => i.mode),
    items.map((i) => i.quoteId),
    items.map((i) => i.beneficiaryId ?? null),
  ]);
  const byOrdinal = new Map(rows.map((row) => [Number(row.n), row]));
  return items.map((_, index) => {
    const row = byOrdinal.get(index + 1)!;
    const pick = (prefix: string, columns: readonly string[]) => Object.fromEntries(columns.map((c) => [c, row[`${prefix}${c}`]]));
    return {
      quote: row.q_id ? (pick('q_', QUOTE) as unknown as QuoteRow) : undefined,
      beneficiary: row.b_id ? ({ ...pick('b_', BENEFICIARY), created_at_us: row.b_created_at_us } as unknown as BeneficiaryRow) : undefined,
    };
  });
}
