// A tenant's books as the payout and outcome commits would have written them, seeded by SQL (nothing
// goes through Node): one row per payment with its status (70 % settled, 15 % failed after the charge,
// 10 % still submitted, 5 % returned), 100 beneficiaries, one Caracas day, every entry, event, limit
// counter and balance. A reconciliation run over it comes out clean. Used by the reconciliation scale
// test (100,000 payments) and the bench's reconciliation scenario (1,000,000).
import type { Queryable } from '../src/db/database.ts';

/** What each seeded payout delivers, and its fee (minor units). */
export const SEEDED_DELIVER = 1_000_000n;
export const SEEDED_FEE = 10_000n;

/**
 * The ledger transactions a seed of `payments` (a multiple of 20) writes: a payout each, a settlement
 * for the settled and the returned (15 of 20), a failure (3 of 20), a return (1 of 20).
 */
export function seededLedgerTransactions(payments: number): number {
  if (payments % 20 !== 0) throw new Error(`invariant: a seed of ${payments} payments is not a multiple of 20`);
  return (payments / 20) * 39;
}

/** The statements of the seed, each run with the tenant's id as $1 where it names one. */
export const seedSql = (payments: number): string[] => [
  `CREATE TABLE scale_seed AS
     SELECT g, gen_random_uuid() AS id,
            (CASE WHEN g % 20 < 14 THEN 'settled' WHEN g % 20 < 17 THEN 'failed' WHEN g % 20 < 19 THEN 'submitted' ELSE 'reversed' END) AS status,
            ('00000000-0000-4000-8000-' || lpad((g % 100)::text, 12, '0'))::uuid AS beneficiary_id
       FROM generate_series(1, ${payments}) AS g`,
  `INSERT INTO payments (tenant_id, mode, id, beneficiary_id, status, status_reason, source_asset, source_amount, payout_asset, payout_amount,
                         fee_amount, method, method_requested, compensated, bank_reference, beneficiary, settled_at, usage_day, funding_account)
   SELECT $1, 'test', s.id, s.beneficiary_id, s.status, CASE s.status WHEN 'failed' THEN 'rail_rejected' WHEN 'reversed' THEN 'returned_by_bank' END,
          'BS', ${SEEDED_DELIVER + SEEDED_FEE}, 'BS', ${SEEDED_DELIVER}, CASE WHEN s.status = 'failed' THEN 0 ELSE ${SEEDED_FEE} END, 'pago_movil', 'pago_movil',
          s.status = 'failed', CASE WHEN s.status IN ('settled', 'reversed') THEN 'REF' || s.g END, '{}'::jsonb,
          CASE WHEN s.status IN ('settled', 'reversed') THEN now() END, DATE '2026-11-23', 'prefunding'
     FROM scale_seed s`,
  `CREATE TABLE scale_entries AS
     SELECT gen_random_uuid() AS id, s.id AS payment_id, k.kind
       FROM scale_seed s
      CROSS JOIN LATERAL (VALUES ('payout', true), ('payout_settlement', s.status IN ('settled', 'reversed')),
                                 ('payout_failure', s.status = 'failed'), ('payout_reversal', s.status = 'reversed')) AS k(kind, made)
      WHERE k.made`,
  `INSERT INTO ledger_transactions (tenant_id, mode, id, kind, payment_id) SELECT $1, 'test', id, kind, payment_id FROM scale_entries`,
  `INSERT INTO ledger_postings (tenant_id, transaction_id, mode, asset, account_kind, amount)
   SELECT $1, e.id, 'test', 'BS', p.account, p.amount
     FROM scale_entries e
    CROSS JOIN LATERAL (VALUES
      ('payout', 'prefunding', ${SEEDED_DELIVER + SEEDED_FEE}), ('payout', 'in_flight', ${-SEEDED_DELIVER}), ('payout', 'revenue', ${-SEEDED_FEE}),
      ('payout_settlement', 'in_flight', ${SEEDED_DELIVER}), ('payout_settlement', 'treasury', ${-SEEDED_DELIVER}),
      ('payout_failure', 'in_flight', ${SEEDED_DELIVER}), ('payout_failure', 'revenue', ${SEEDED_FEE}), ('payout_failure', 'prefunding', ${-(SEEDED_DELIVER + SEEDED_FEE)}),
      ('payout_reversal', 'treasury', ${SEEDED_DELIVER}), ('payout_reversal', 'prefunding', ${-SEEDED_DELIVER})) AS p(kind, account, amount)
    WHERE p.kind = e.kind`,
  `INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, status, published_at)
   SELECT $1, 'test', e.type, 'payment', s.id, '{}'::jsonb, '{}', 'published', now()
     FROM scale_seed s
    CROSS JOIN LATERAL (VALUES ('payment.settled', s.status IN ('settled', 'reversed')), ('payment.failed', s.status = 'failed'),
                               ('payment.reversed', s.status = 'reversed')) AS e(type, made)
    WHERE e.made`,
  `INSERT INTO limit_usage (tenant_id, mode, subject_kind, subject_id, method, business_date, amount, count)
   SELECT $1, 'test', k.kind, k.subject_id, 'pago_movil', DATE '2026-11-23', sum(${SEEDED_DELIVER}), count(*)
     FROM scale_seed s CROSS JOIN LATERAL (VALUES ('tenant', $1::uuid), ('beneficiary', s.beneficiary_id)) AS k(kind, subject_id)
    WHERE s.status IN ('submitted', 'settled')
    GROUP BY k.kind, k.subject_id`,
  // The balances the batches would have kept, funding included.
  `INSERT INTO ledger_accounts AS a (tenant_id, mode, asset, kind, slot, balance)
   SELECT $1, 'test', asset, account_kind, 0, sum(amount) FROM ledger_postings WHERE tenant_id = $1 GROUP BY asset, account_kind
   ON CONFLICT (tenant_id, mode, asset, kind, slot) DO UPDATE SET balance = EXCLUDED.balance`,
  `DROP TABLE scale_seed`,
  `DROP TABLE scale_entries`,
];

/**
 * Seeds `payments` payments of the tenant's test mode in the caller's transaction. The per-entry
 * balance trigger is what the batches' own writes face; the seed is balanced by construction, so it
 * is loaded as a replica would (session_replication_role).
 */
export async function seedReconciliationTenant(tx: Queryable, tenantId: string, payments: number): Promise<void> {
  await tx.exec('SET LOCAL session_replication_role = replica');
  for (const sql of seedSql(payments)) await tx.query(sql, sql.includes('$1') ? [tenantId] : undefined);
}
