// A reconciliation run over 100,000 payments (PostgreSQL): seeded by SQL as the payout and outcome
// batches would have written them (every status, their entries, events, limit counters and
// balances), it comes out clean, in bounded memory, and reports its time.
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/database.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { ENGINE, startTestApp, type TestApp } from '../support/harness.ts';
import { fundedTenant, type FundedTenant } from '../support/payouts.ts';
import { reconciliationService } from '../support/reconciliation.ts';

const PAYMENTS = 100_000;
const DELIVER = 1_000_000n;
const FEE = 10_000n;
/**
 * Live heap growth allowed during the run, measured after a full garbage collection at the end of each
 * of its transactions: what a run keeps from page to page (the tally, the bounded evidence), never the
 * tenant's data.
 */
const LIVE_HEAP_GROWTH_MAX_BYTES = 16 * 1024 * 1024;
/**
 * The run's time allowed. Measured 23 s alone and 38 s beside another test file on a 2-core machine
 * under a load average near 10; a plan that read the tenant's payments once per page (as one did,
 * before it was found here) takes many times that.
 */
const RUN_MAX_MS = 90_000;

// The seed: one row per payment with its status (70% settled, 15% failed after the charge, 10% still
// submitted, 5% returned), 100 beneficiaries, one Caracas day.
const SEED_SQL = [
  `CREATE TABLE scale_seed AS
     SELECT g, gen_random_uuid() AS id,
            (CASE WHEN g % 20 < 14 THEN 'settled' WHEN g % 20 < 17 THEN 'failed' WHEN g % 20 < 19 THEN 'submitted' ELSE 'reversed' END) AS status,
            ('00000000-0000-4000-8000-' || lpad((g % 100)::text, 12, '0'))::uuid AS beneficiary_id
       FROM generate_series(1, ${PAYMENTS}) AS g`,
  `INSERT INTO payments (tenant_id, mode, id, beneficiary_id, status, status_reason, source_asset, source_amount, payout_asset, payout_amount,
                         fee_amount, method, method_requested, compensated, bank_reference, beneficiary, settled_at, usage_day, funding_account)
   SELECT $1, 'test', s.id, s.beneficiary_id, s.status, CASE s.status WHEN 'failed' THEN 'rail_rejected' WHEN 'reversed' THEN 'returned_by_bank' END,
          'BS', ${DELIVER + FEE}, 'BS', ${DELIVER}, CASE WHEN s.status = 'failed' THEN 0 ELSE ${FEE} END, 'pago_movil', 'pago_movil',
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
      ('payout', 'prefunding', ${DELIVER + FEE}), ('payout', 'in_flight', ${-DELIVER}), ('payout', 'revenue', ${-FEE}),
      ('payout_settlement', 'in_flight', ${DELIVER}), ('payout_settlement', 'treasury', ${-DELIVER}),
      ('payout_failure', 'in_flight', ${DELIVER}), ('payout_failure', 'revenue', ${FEE}), ('payout_failure', 'prefunding', ${-(DELIVER + FEE)}),
      ('payout_reversal', 'treasury', ${DELIVER}), ('payout_reversal', 'prefunding', ${-DELIVER})) AS p(kind, account, amount)
    WHERE p.kind = e.kind`,
  `INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, status, published_at)
   SELECT $1, 'test', e.type, 'payment', s.id, '{}'::jsonb, '{}', 'published', now()
     FROM scale_seed s
    CROSS JOIN LATERAL (VALUES ('payment.settled', s.status IN ('settled', 'reversed')), ('payment.failed', s.status = 'failed'),
                               ('payment.reversed', s.status = 'reversed')) AS e(type, made)
    WHERE e.made`,
  `INSERT INTO limit_usage (tenant_id, mode, subject_kind, subject_id, method, business_date, amount, count)
   SELECT $1, 'test', k.kind, k.subject_id, 'pago_movil', DATE '2026-11-23', sum(${DELIVER}), count(*)
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

describe(`a reconciliation run over ${PAYMENTS.toLocaleString('en')} payments on ${ENGINE}`, { skip: ENGINE !== 'postgres' && 'PostgreSQL only (seeding 100,000 payments by SQL)' }, () => {
  let t: TestApp;
  let tenant: FundedTenant;
  let seedMs = 0;

  before(async () => {
    t = await startTestApp({ env: { ROLE: 'api', RECONCILE_INTERVAL_S: '0' } });
    tenant = await fundedTenant(t, 100_000_000_000n);
    const started = Date.now();
    await t.db.transaction(async (tx) => {
      // Bulk load: the per-entry balance trigger is what the batches' own writes face; the seed is balanced by construction.
      await tx.exec('SET LOCAL session_replication_role = replica');
      for (const sql of SEED_SQL) await tx.query(sql, sql.includes('$1') ? [tenant.tenantId] : undefined);
    });
    // What autovacuum would have done after such a load.
    await t.db.exec('ANALYZE');
    seedMs = Date.now() - started;
  });
  after(async () => {
    await t.close();
  });

  it('comes out clean, reading every payment and entry, in bounded memory and time', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    let livePeak = 0;
    let transactions = 0;
    let gcMs = 0;
    // The database as the run sees it, except that after each of its transactions the heap is
    // collected and what is left (live) is measured.
    const measured: Database = {
      engine: t.db.engine,
      relaxed: t.db.relaxed,
      query: (sql, params) => t.db.query(sql, params),
      exec: (sql) => t.db.exec(sql),
      withConnection: (work) => t.db.withConnection(work),
      close: () => t.db.close(),
      async transaction(work, options) {
        const result = await t.db.transaction(work, options);
        const before = performance.now();
        gc();
        gcMs += performance.now() - before;
        livePeak = Math.max(livePeak, process.memoryUsage().heapUsed);
        transactions += 1;
        return result;
      },
    };
    const { service } = reconciliationService(measured, systemClock);
    const [queued] = await service.request({ tenantId: tenant.tenantId, mode: 'test' });
    gc();
    const baseline = process.memoryUsage().heapUsed;
    livePeak = baseline;
    const startedMs = performance.now();
    await service.drain();
    const runMs = performance.now() - startedMs - gcMs;
    const { run, discrepancies } = await service.get(queued!.id);
    const growthMb = (livePeak - baseline) / 1024 / 1024;
    const figures =
      `seeded in ${(seedMs / 1000).toFixed(1)} s; run ${(runMs / 1000).toFixed(2)} s (forced collections excluded); ` +
      `live heap growth ${growthMb.toFixed(2)} MB at most over ${transactions} transactions; examined ${JSON.stringify(run.examined)}`;
    process.stdout.write(`# reconciliation scale: ${figures}\n`);
    assert.equal(run.status, 'completed', run.error ?? '');
    assert.deepEqual(discrepancies.slice(0, 5).map((d) => `${d.check_name} ${d.subject_id} ${d.facet}: ${d.expected} -> ${d.found}`), []);
    assert.equal(run.examined.payments, PAYMENTS);
    // 100,000 payouts, 75,000 settlements (settled and returned), 15,000 failures, 5,000 returns, and the funding.
    assert.equal(run.examined.ledgerTransactions, 195_001);
    assert.ok(livePeak - baseline < LIVE_HEAP_GROWTH_MAX_BYTES, figures);
    assert.ok(runMs < RUN_MAX_MS, figures);
  });
});
