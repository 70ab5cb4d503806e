// Continuous reconciliation: after a mixed workload (every sandbox outcome, returns, fundings in two
// assets, a credit tenant's closes) every check passes; then each corruption an operator's psql or a
// bug could make is reported by the next run, with the evidence, and the books are never touched.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../src/http/types.ts';
import type { RunRow } from '../../src/db/repositories/reconciliation-runs.ts';
import { ManualClock } from '../support/clock.ts';
import { RECONCILIATION_CHECKS, type Discrepancy } from '../../src/domain/reconciliation.ts';
import { DailyCloseWorker } from '../../src/workers/daily-close.ts';
import { client, ENGINE, startTestApp, type TestApp } from '../support/harness.ts';
import { metricsHeaders, valueOf } from '../support/metrics.ts';
import {
  advanceAndReap,
  AMPLE_RAIL_TIMEOUT_MS,
  appWithRailTimeout,
  assertLedgerBalanced,
  beneficiary,
  fundedTenant,
  payout,
  type FundedTenant,
} from '../support/payouts.ts';

const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '3000',
  SANDBOX_REVERSE_DELAY_MS: '10000',
  SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
  REAPER_INTERVAL_MS: '1000',
  RECONCILE_INTERVAL_S: '0',
};
/** The sandbox trigger whose rail call hangs until it times out. */
const HANGS = 'V99990009';
/**
 * The rail timeout of the process that sends the one payout meant to time out; every other payout is
 * sent with the ample one, so a slow answer is never taken for a timeout.
 */
const HANG_RAIL_TIMEOUT_MS = 300;

interface Detail {
  run: ReturnType<typeof runSummary>;
  discrepancies: Discrepancy[];
}

function runSummary(run: RunRow) {
  return {
    id: run.id,
    status: run.status,
    discrepancyCount: Number(run.discrepancy_count),
    checks: run.checks,
    examined: run.examined,
  };
}

describe(`reconciliation on ${ENGINE}`, () => {
  let t: TestApp;
  let clock: ManualClock;
  let impatient: App | undefined;
  /** The tenant's API on a process of its own, with the short rail timeout. */
  async function impatientApi(tenant: FundedTenant) {
    impatient ??= await appWithRailTimeout(t, HANG_RAIL_TIMEOUT_MS, { clock });
    return client(impatient, tenant.key);
  }
  let prefunded: FundedTenant;
  let credit: FundedTenant;
  const paymentOf: Record<string, string> = {};

  /** Queues a run of the tenant's test mode, lets this process run it, and reads it back with its evidence. */
  async function reconcile(tenantId: string): Promise<Detail> {
    const [queued] = await t.services.reconciliation.request({ tenantId, mode: 'test' });
    await t.services.reconciliation.drain();
    const { run, discrepancies } = await t.services.reconciliation.get(queued!.id);
    assert.equal(run.status, 'completed', run.error ?? '');
    // Each discrepancy opened its anomaly in the run's own transaction, with both figures.
    const { rows: opened } = await t.db.query<{
      check: string;
      subject: string;
      ours: Record<string, string>;
      theirs: Record<string, string>;
    }>(
      `SELECT raw->>'check' AS check, raw->>'subjectId' AS subject, ours, theirs FROM anomalies
        WHERE tenant_id = $1 AND mode = 'test' AND kind = 'reconciliation_discrepancy' AND status = 'open' AND raw->>'runId' = $2`,
      [tenantId, run.id],
    );
    assert.deepEqual(
      opened.map((a) => `${a.check} ${a.subject} ${JSON.stringify(a.ours)} ${JSON.stringify(a.theirs)}`).sort(),
      discrepancies
        .map(
          (d) =>
            `${d.check_name} ${d.subject_id} ${JSON.stringify({ [d.facet]: d.expected })} ${JSON.stringify({ [d.facet]: d.found })}`,
        )
        .sort(),
    );
    return {
      run: runSummary(run),
      discrepancies: discrepancies.map((d) => ({
        check: d.check_name,
        subjectType: d.subject_type,
        subjectId: d.subject_id,
        facet: d.facet,
        paymentId: d.payment_id,
        expected: d.expected,
        found: d.found,
        detail: d.detail,
      })),
    };
  }

  /** What a run reported, as `check subject facet: expected → found` lines (sorted). */
  function findings(detail: Detail): string[] {
    return detail.discrepancies.map((d) => `${d.check} ${d.subjectId} ${d.facet}: ${d.expected} -> ${d.found}`).sort();
  }

  async function pay(
    tenant: FundedTenant,
    name: string,
    nationalId: string,
    expected: string,
    extra: Record<string, unknown> = {},
    deliver = 1_000_000,
  ) {
    const made = await payout(
      nationalId === HANGS ? await impatientApi(tenant) : tenant.api,
      { beneficiary: beneficiary(nationalId), ...extra },
      deliver,
    );
    assert.equal(made.status, 201, made.raw);
    assert.equal(made.body.status, expected, `${name}: ${made.raw}`);
    paymentOf[name] = made.body.id;
  }

  async function statusOf(name: string): Promise<string> {
    const { rows } = await t.db.query<{ status: string }>(`SELECT status FROM payments WHERE id = $1`, [
      paymentOf[name],
    ]);
    return rows[0]!.status;
  }

  before(async () => {
    clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
    t = await startTestApp({ clock, env: ENV });
    const admin = client(t.app, t.platformKey);

    // A prefunded tenant, funded in BS and in USD, through every sandbox outcome.
    prefunded = await fundedTenant(t, 1_000_000_000n);
    const usd = await admin.post(
      `/v1/admin/tenants/${prefunded.tenantId}/fundings`,
      { mode: 'test', asset: 'USD', amount: 500_000 },
      { 'idempotency-key': 'usd-1' },
    );
    assert.equal(usd.status, 201, usd.raw);
    await pay(prefunded, 'settledNow', 'V99990001', 'settled');
    await pay(prefunded, 'unknownSettles', 'V99990002', 'unknown');
    await pay(prefunded, 'unknownFails', 'V99990003', 'unknown');
    await pay(prefunded, 'mismatch', 'V99990004', 'failed');
    await pay(prefunded, 'unreachable', 'V99990005', 'failed');
    await pay(prefunded, 'submittedFails', 'V99990006', 'submitted');
    await pay(prefunded, 'returned', 'V99990007', 'submitted');
    await pay(prefunded, 'switched', 'V99990008', 'submitted', {
      beneficiary: beneficiary('V99990008', { accountNumber: '01020000000000000001' }),
    });
    await pay(prefunded, 'strict', 'V99990008', 'failed', { methodPolicy: 'strict' });
    await pay(prefunded, 'timeout', 'V99990009', 'unknown');
    await pay(prefunded, 'customer', 'V30000001', 'submitted', { customerId: '6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d' });
    await pay(prefunded, 'belowFloor', 'V30000002', 'failed', {}, 50_000);
    await pay(prefunded, 'noSender', 'V30000003', 'failed', { sender: undefined });
    const usdQuote = await prefunded.api.post('/v1/quotes', {
      spend: { asset: 'USD', amount: 2_000 },
      deliver: { asset: 'BS' },
    });
    assert.equal(usdQuote.status, 201, usdQuote.raw);
    await pay(prefunded, 'paidInUsd', 'V30000004', 'submitted', { quoteId: usdQuote.body.id });
    await pay(prefunded, 'simulatedFail', 'V30000005', 'submitted');
    await pay(prefunded, 'simulatedReturn', 'V30000006', 'submitted');
    await advanceAndReap(t, clock, 4000);
    await advanceAndReap(t, clock, 11_000);
    const simulate = (name: string, body: unknown) =>
      prefunded.api.post(`/v1/sandbox/payments/${paymentOf[name]}/simulate`, body);
    await pay(prefunded, 'simulatedFailLate', 'V30000007', 'submitted');
    assert.equal((await simulate('simulatedFailLate', { outcome: 'fail', reason: 'bank_unreachable' })).status, 200);
    assert.equal((await simulate('simulatedReturn', { outcome: 'reverse' })).status, 200);
    assert.equal(
      (
        await admin.post(
          `/v1/admin/tenants/${prefunded.tenantId}/fundings`,
          { mode: 'test', asset: 'BS', amount: 7_000_000 },
          { 'idempotency-key': 'bs-2' },
        )
      ).status,
      201,
    );

    // A credit tenant: draws, a scheduled close, a failure and a return after it, an admin close.
    credit = await fundedTenant(t, 0n, { creditEnabled: true });
    clock.set(new Date('2026-11-25T03:00:00Z')); // 23:00 in Caracas on the 24th
    await pay(credit, 'creditSettled', 'V99990001', 'settled');
    await pay(credit, 'creditFails', 'V99990006', 'submitted');
    await pay(credit, 'creditReturned', 'V99990007', 'submitted');
    clock.set(new Date('2026-11-25T04:30:00Z')); // the 24th has ended
    await new DailyCloseWorker(t.services.treasury, t.app.log).runOnce();
    await advanceAndReap(t, clock, 4000);
    await advanceAndReap(t, clock, 11_000);
    assert.equal((await admin.post(`/v1/admin/tenants/${credit.tenantId}/close`, { mode: 'test' })).status, 200);
    await pay(credit, 'creditDrawn', 'V30000010', 'submitted');
    await advanceAndReap(t, clock, 4000);

    // Left unresolved: still in flight when the books are checked.
    await pay(prefunded, 'inFlight', 'V30000008', 'submitted');
    await pay(prefunded, 'inFlightUsd', 'V30000009', 'submitted', {
      quoteId: (
        await prefunded.api.post('/v1/quotes', { spend: { asset: 'USD', amount: 1_500 }, deliver: { asset: 'BS' } })
      ).body.id,
    });

    const expected: Record<string, string> = {
      settledNow: 'settled',
      unknownSettles: 'settled',
      unknownFails: 'failed',
      submittedFails: 'failed',
      returned: 'reversed',
      switched: 'settled',
      timeout: 'settled',
      customer: 'settled',
      paidInUsd: 'settled',
      simulatedFailLate: 'failed',
      simulatedReturn: 'reversed',
      inFlight: 'submitted',
      inFlightUsd: 'submitted',
      creditFails: 'failed',
      creditReturned: 'reversed',
      creditDrawn: 'settled',
    };
    for (const [name, status] of Object.entries(expected)) assert.equal(await statusOf(name), status, name);
    const { rows } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM daily_closes WHERE tenant_id = $1 AND amount > 0`,
      [credit.tenantId],
    );
    assert.equal(rows[0]!.n, 1, 'the scheduled close settled a draw');
    await assertLedgerBalanced(t);
  });

  after(async () => {
    await impatient?.close();
    await t.close();
  });

  it('a mixed workload reconciles clean: every check passes, for both tenants', async () => {
    for (const tenant of [prefunded, credit]) {
      const detail = await reconcile(tenant.tenantId);
      assert.deepEqual(findings(detail), []);
      assert.equal(detail.run.discrepancyCount, 0);
      for (const check of RECONCILIATION_CHECKS) assert.equal(detail.run.checks[check]?.verdict, 'pass', check);
      const { rows } = await t.db.query<{ payments: number; transactions: number }>(
        `SELECT (SELECT count(*)::int FROM payments WHERE tenant_id = $1 AND mode = 'test') AS payments,
                (SELECT count(*)::int FROM ledger_transactions WHERE tenant_id = $1 AND mode = 'test') AS transactions`,
        [tenant.tenantId],
      );
      assert.deepEqual(
        [detail.run.examined.payments, detail.run.examined.ledgerTransactions],
        [rows[0]!.payments, rows[0]!.transactions],
        'every payment and entry was read',
      );
    }
    const metrics = (await client(t.app).get('/metrics', metricsHeaders)).raw;
    for (const check of RECONCILIATION_CHECKS)
      assert.equal(valueOf(metrics, 'bolivar_reconciliation_discrepancies', { check }), 0, check);
    assert.equal(valueOf(metrics, 'bolivar_reconciliation_last_clean_run_age_seconds'), 0);
    assert.equal(valueOf(metrics, 'bolivar_reconciliation_runs_total', { result: 'clean' }), 2);
    assert.equal(valueOf(metrics, 'bolivar_reconciliation_run_duration_seconds_count', { result: 'clean' }), 2);
  });

  /** Runs `sql` (statements with $1 = the prefunded tenant, $2 = `param`) as an operator's psql session would. */
  async function psql(statements: string[], param: unknown = null): Promise<void> {
    await t.db.transaction(async (tx) => {
      for (const sql of statements)
        await tx.query(
          sql,
          sql.includes('$2') ? [prefunded.tenantId, param] : sql.includes('$1') ? [prefunded.tenantId] : undefined,
        );
    });
  }

  /** Corrupts, runs `check`, and always undoes the corruption, so each test sees only its own. */
  async function corrupted(
    corrupt: () => Promise<void>,
    undo: () => Promise<void>,
    check: () => Promise<void>,
  ): Promise<void> {
    await corrupt();
    try {
      await check();
    } finally {
      await undo();
    }
  }

  const entryOf = async (name: string, kind: string) =>
    (
      await t.db.query<{ id: string }>(`SELECT id FROM ledger_transactions WHERE payment_id = $1 AND kind = $2`, [
        paymentOf[name],
        kind,
      ])
    ).rows[0]!.id;
  const balanceOf = async (tenantId: string, kind: string) =>
    (
      await t.db.query<{ b: string }>(
        `SELECT sum(balance)::text AS b FROM ledger_accounts WHERE tenant_id = $1 AND mode = 'test' AND asset = 'BS' AND kind = $2`,
        [tenantId, kind],
      )
    ).rows[0]!.b;

  it("a posting's amount changed: the entry is unbalanced, the account disagrees with its postings, and the payment with its entries", async () => {
    const settlement = await entryOf('settledNow', 'payout_settlement');
    const shift = (delta: number) => () =>
      psql(
        [
          `UPDATE ledger_postings SET amount = amount + ${delta} WHERE tenant_id = $1 AND transaction_id = $2 AND account_kind = 'treasury'`,
        ],
        settlement,
      );
    await corrupted(shift(100), shift(-100), async () => {
      const treasury = BigInt(await balanceOf(prefunded.tenantId, 'treasury'));
      const detail = await reconcile(prefunded.tenantId);
      assert.deepEqual(findings(detail), [
        `account_balances BS/treasury balance: ${treasury + 100n} -> ${treasury}`,
        `payment_entries ${paymentOf.settledNow} BS/treasury: -1000000 -> -999900`,
        `transaction_balanced ${settlement} BS: 0 -> 100`,
      ]);
      const unbalanced = detail.discrepancies.find((d) => d.check === 'transaction_balanced')!;
      assert.deepEqual(unbalanced.detail, {
        transactionId: settlement,
        kind: 'payout_settlement',
        paymentId: paymentOf.settledNow,
        asset: 'BS',
      });
      assert.equal(unbalanced.paymentId, paymentOf.settledNow);
      const entries = detail.discrepancies.find((d) => d.check === 'payment_entries')!.detail.entries as Array<{
        id: string;
        kind: string;
      }>;
      assert.deepEqual(
        entries.map((e) => e.kind),
        ['payout', 'payout_settlement'],
      );
      assert.equal(entries[1]!.id, settlement);
      assert.equal(detail.run.checks.transaction_balanced?.verdict, 'fail');
      assert.equal(detail.run.checks.in_flight?.verdict, 'pass');
    });
  });

  it("an account's balance changed: it disagrees with its postings and with the tenant's fundings, charges and refunds; nothing is corrected", async () => {
    const before = BigInt(await balanceOf(prefunded.tenantId, 'prefunding'));
    const shift = (delta: number) => () =>
      psql([
        `UPDATE ledger_accounts SET balance = balance + ${delta} WHERE tenant_id = $1 AND mode = 'test' AND asset = 'BS' AND kind = 'prefunding'`,
      ]);
    await corrupted(shift(-5000), shift(5000), async () => {
      const detail = await reconcile(prefunded.tenantId);
      assert.deepEqual(findings(detail), [
        `account_balances BS/prefunding balance: ${before} -> ${before - 5000n}`,
        `prefunding BS/prefunding position: ${-before} -> ${-before + 5000n}`,
      ]);
      const position = detail.discrepancies.find((d) => d.check === 'prefunding')!;
      assert.deepEqual(Object.keys(position.detail).sort(), [
        'account',
        'asset',
        'charges',
        'closes',
        'fundings',
        'refunds',
        'returns',
      ]);
      assert.equal(position.detail.fundings, '1007000000', 'both BS fundings');
      assert.equal(
        await balanceOf(prefunded.tenantId, 'prefunding'),
        String(before - 5000n),
        'the run reports; it never corrects',
      );
    });
  });

  it("a payment's status changed without its entries: its entries and events disagree, and so does the in-flight account", async () => {
    const { rows } = await t.db.query<{ inflight: string; other: string }>(
      `SELECT (SELECT payout_amount::text FROM payments WHERE id = $1) AS inflight, (SELECT payout_amount::text FROM payments WHERE id = $2) AS other`,
      [paymentOf.inFlight, paymentOf.inFlightUsd],
    );
    const [inflight, other] = [BigInt(rows[0]!.inflight), BigInt(rows[0]!.other)];
    await corrupted(
      () =>
        psql(
          [
            `UPDATE payments SET status = 'settled', settled_at = now(), bank_reference = 'PSQL-FIX' WHERE tenant_id = $1 AND id = $2`,
          ],
          paymentOf.inFlight,
        ),
      () =>
        psql(
          [
            `UPDATE payments SET status = 'submitted', settled_at = NULL, bank_reference = NULL WHERE tenant_id = $1 AND id = $2`,
          ],
          paymentOf.inFlight,
        ),
      async () => {
        const detail = await reconcile(prefunded.tenantId);
        assert.deepEqual(findings(detail), [
          `in_flight BS/in_flight unresolved_payouts: ${-other} -> ${-(inflight + other)}`,
          `outcome_events ${paymentOf.inFlight} payment.settled: 1 -> 0`,
          `payment_entries ${paymentOf.inFlight} entries: payout,payout_settlement -> payout`,
        ]);
        assert.equal(detail.discrepancies.find((d) => d.check === 'in_flight')!.detail.unresolvedPayouts, 1);
      },
    );
  });

  it('a missing outcome event is reported with its payment', async () => {
    await corrupted(
      () =>
        psql(
          [
            `CREATE TABLE reconciliation_test_saved AS SELECT * FROM outbox_events WHERE tenant_id = $1 AND aggregate_id = $2`,
            `DELETE FROM webhook_deliveries WHERE tenant_id = $1 AND event_id IN (SELECT id FROM reconciliation_test_saved)`,
            `DELETE FROM outbox_events WHERE tenant_id = $1 AND aggregate_id = $2`,
          ],
          paymentOf.settledNow,
        ),
      () =>
        psql([
          `INSERT INTO outbox_events SELECT * FROM reconciliation_test_saved`,
          `DROP TABLE reconciliation_test_saved`,
        ]),
      async () => {
        const detail = await reconcile(prefunded.tenantId);
        assert.deepEqual(findings(detail), [`outcome_events ${paymentOf.settledNow} payment.settled: 1 -> 0`]);
        assert.deepEqual(detail.discrepancies[0]!.detail, {
          status: 'settled',
          eventType: 'payment.settled',
          eventIds: [],
        });
      },
    );
  });

  it('a duplicated outcome event is reported with both event ids', async () => {
    // The outbox's unique index refuses a second outcome event: an operator would have to drop it.
    const copies = async () =>
      (
        await t.db.query<{ id: string }>(`SELECT id::text FROM outbox_events WHERE aggregate_id = $1 ORDER BY id`, [
          paymentOf.mismatch,
        ])
      ).rows.map((r) => r.id);
    const original = await copies();
    await corrupted(
      () =>
        psql(
          [
            `DROP INDEX outbox_one_outcome`,
            `INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, status)
             SELECT tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, 'pending' FROM outbox_events WHERE tenant_id = $1 AND aggregate_id = $2`,
          ],
          paymentOf.mismatch,
        ),
      () =>
        psql(
          [
            `DELETE FROM outbox_events WHERE tenant_id = $1 AND aggregate_id = $2 AND id <> ${original[0]}`,
            `CREATE UNIQUE INDEX outbox_one_outcome ON outbox_events (tenant_id, aggregate_id) WHERE event_type IN ('payment.settled', 'payment.failed')`,
          ],
          paymentOf.mismatch,
        ),
      async () => {
        const detail = await reconcile(prefunded.tenantId);
        assert.deepEqual(findings(detail), [`outcome_events ${paymentOf.mismatch} payment.failed: 1 -> 2`]);
        assert.deepEqual(detail.discrepancies[0]!.detail.eventIds, await copies());
      },
    );
  });

  it('a limit counter changed: it disagrees with the payouts it counts, naming the day, the subject and both figures', async () => {
    const { rows } = await t.db.query<{ day: string; amount: string; count: string }>(
      `SELECT business_date::text AS day, amount::text, count::text FROM limit_usage
        WHERE tenant_id = $1 AND subject_kind = 'tenant' AND method = 'pago_movil' AND business_date = (SELECT usage_day FROM payments WHERE id = $2)`,
      [prefunded.tenantId, paymentOf.customer],
    );
    const counter = rows[0]!;
    const shift = (delta: number) => () =>
      psql(
        [
          `UPDATE limit_usage SET amount = amount + ${delta} WHERE tenant_id = $1 AND subject_kind = 'tenant' AND method = 'pago_movil' AND business_date = $2::date`,
        ],
        counter.day,
      );
    await corrupted(shift(1), shift(-1), async () => {
      const detail = await reconcile(prefunded.tenantId);
      assert.deepEqual(findings(detail), [
        `limit_usage ${counter.day}|tenant|${prefunded.tenantId}|pago_movil usage: ${counter.amount}/${counter.count} -> ${BigInt(counter.amount) + 1n}/${counter.count}`,
      ]);
    });
  });

  it("a payment's fee changed: the revenue account and the payment's entries disagree with it", async () => {
    const shift = (delta: number) => () =>
      psql(
        [`UPDATE payments SET fee_amount = fee_amount + ${delta} WHERE tenant_id = $1 AND id = $2`],
        paymentOf.customer,
      );
    await corrupted(shift(7), shift(-7), async () => {
      const revenue = BigInt(await balanceOf(prefunded.tenantId, 'revenue'));
      const detail = await reconcile(prefunded.tenantId);
      assert.deepEqual(findings(detail), [
        `payment_entries ${paymentOf.customer} BS/revenue: -10007 -> -10000`,
        `revenue BS/revenue fees: ${revenue - 7n} -> ${revenue}`,
      ]);
    });
  });

  it('a recorded daily close without its ledger entry: credit drawn no longer matches the close history', async () => {
    const shift = (delta: number) => async () => {
      await t.db.query(`UPDATE daily_closes SET amount = amount + ${delta} WHERE tenant_id = $1 AND amount > 0`, [
        credit.tenantId,
      ]);
    };
    await corrupted(shift(1), shift(-1), async () => {
      const detail = await reconcile(credit.tenantId);
      assert.deepEqual(findings(detail), ['credit_drawn BS:2026-11-24 entry: 1 -> 0']);
      assert.deepEqual(detail.discrepancies[0]!.detail, {
        asset: 'BS',
        settledAmount: '3030001',
        firstBusinessDate: '2026-11-24',
        recordedCloses: 1,
        closeEntries: 0,
      });
    });
  });

  it('with every corruption undone, the next runs are clean again, and the metrics show it', async () => {
    for (const tenant of [prefunded, credit]) assert.deepEqual(findings(await reconcile(tenant.tenantId)), []);
    const metrics = (await client(t.app).get('/metrics', metricsHeaders)).raw;
    assert.equal(valueOf(metrics, 'bolivar_reconciliation_discrepancies'), 0);
    assert.equal(valueOf(metrics, 'bolivar_reconciliation_runs_total', { result: 'discrepancies' }), 8);
  });
});
