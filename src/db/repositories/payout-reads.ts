import type { Mode } from '../../domain/api-keys.ts';
import type { Queryable } from '../database.ts';
import type { BeneficiaryRow } from './beneficiaries.ts';
import type { QuoteRow } from './quotes.ts';

const QUOTE = ['tenant_id', 'mode', 'id', 'customer_id', 'fixed', 'spend_asset', 'spend_amount', 'deliver_asset', 'deliver_amount',
  'fee_amount', 'rate_value', 'rate_market', 'spread_bps', 'expires_at', 'created_at', 'consumed_at', 'payment_id'] as const;
const BENEFICIARY = ['tenant_id', 'mode', 'id', 'full_name', 'national_id', 'bank_code', 'account_number', 'phone', 'asset', 'country',
  'instrument', 'status', 'payout_count', 'last_success_at', 'last_failure_reason', 'created_at'] as const;

const SQL = `SELECT ${QUOTE.map((c) => `q.${c} AS q_${c}`).join(', ')}, ${BENEFICIARY.map((c) => `b.${c} AS b_${c}`).join(', ')},
       (extract(epoch FROM b.created_at) * 1000000)::bigint AS b_created_at_us
  FROM (VALUES (1)) AS one (n)
  LEFT JOIN quotes q ON q.tenant_id = $1 AND q.mode = $2 AND q.id = $3
  LEFT JOIN beneficiaries b ON $4::uuid IS NOT NULL AND b.tenant_id = $1 AND b.mode = $2 AND b.id = $4::uuid`;

/**
 * The two rows a payout refers to, read in one round trip: the quote, and the registered
 * beneficiary when the payout names one. Either is undefined when it does not exist.
 */
export async function findQuoteAndBeneficiary(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  quoteId: string,
  beneficiaryId: string | undefined,
): Promise<{ quote?: QuoteRow; beneficiary?: BeneficiaryRow }> {
  const { rows } = await db.query<Record<string, unknown>>(SQL, [tenantId, mode, quoteId, beneficiaryId ?? null]);
  const row = rows[0]!;
  const pick = (prefix: string, columns: readonly string[]) => Object.fromEntries(columns.map((c) => [c, row[`${prefix}${c}`]]));
  return {
    quote: row.q_id ? (pick('q_', QUOTE) as unknown as QuoteRow) : undefined,
    beneficiary: row.b_id ? ({ ...pick('b_', BENEFICIARY), created_at_us: row.b_created_at_us } as unknown as BeneficiaryRow) : undefined,
  };
}
