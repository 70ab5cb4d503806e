// The life of a reconciliation run: the schedule queues what is due (once, whatever the number of
// workers), a run whose worker died is abandoned when its lease runs out, a stopping process abandons
// its run at the next page, a run that lost its lease records nothing, and the discrepancies a run
// stores reach the anomalies hook in the run's own transaction, with a dedup key stable across runs.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { abandonExpiredRuns, claimQueuedRun, type RunRow } from '../../src/db/repositories/reconciliation-runs.ts';
import { ManualClock } from '../support/clock.ts';
import { discrepancyAnomalies, type DiscrepancyAnomaly } from '../../src/domain/reconciliation.ts';
import { RUN_LEASE_MS } from '../../src/services/reconciliation-run.ts';
import { RUN_REST_FACTOR } from '../../src/services/reconciliation.ts';
import { ReconciliationWorker } from '../../src/workers/reconciliation.ts';
import { ENGINE, startTestApp, type TestApp } from '../support/harness.ts';
import { beneficiary, fundedTenant, payout, type FundedTenant } from '../support/payouts.ts';
import { pausingDatabase, reconciliationService } from '../support/reconciliation.ts';

describe(`reconciliation runs on ${ENGINE}`, () => {
  let t: TestApp;
  let clock: ManualClock;
  let tenant: FundedTenant;

  const runRow = async (id: string) =>
    (await t.db.query<RunRow>(`SELECT * FROM reconciliation_runs WHERE id = $1`, [id])).rows[0]!;
  const runsOf = async (tenantId: string) =>
    (
      await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM reconciliation_runs WHERE tenant_id = $1`, [
        tenantId,
      ])
    ).rows[0]!.n;

  before(async () => {
    clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
    t = await startTestApp({ clock, env: { ROLE: 'api', RECONCILE_INTERVAL_S: '0', SANDBOX_SETTLE_DELAY_MS: '3000' } });
    tenant = await fundedTenant(t);
    for (const id of ['V99990001', 'V99990004', 'V30000001'])
      assert.equal((await payout(tenant.api, { beneficiary: beneficiary(id) })).status, 201);
  });
  after(async () => {
    await t.close();
  });

  it('the schedule queues every tenant and mode not reconciled within RECONCILE_INTERVAL_S, once, however many workers ask', async () => {
    const other = await fundedTenant(t, 5_000);
    const { service, observer } = reconciliationService(t.db, clock, { intervalS: 60 });
    const worker = new ReconciliationWorker(service, clock, 60, t.app.log);
    await worker.runOnce();
    const { rows } = await t.db.query<{ tenant_id: string; mode: string; trigger: string; status: string }>(
      `SELECT tenant_id, mode, trigger, status FROM reconciliation_runs ORDER BY tenant_id`,
    );
    assert.deepEqual(
      rows.map((r) => `${r.tenant_id}/${r.mode} ${r.trigger} ${r.status}`).sort(),
      [`${tenant.tenantId}/test schedule completed`, `${other.tenantId}/test schedule completed`].sort(),
    );
    assert.deepEqual(observer.results, ['clean', 'clean']);

    await worker.runOnce();
    const second = reconciliationService(t.db, clock, { intervalS: 60 });
    await new ReconciliationWorker(second.service, clock, 60, t.app.log).runOnce();
    assert.equal(await runsOf(tenant.tenantId), 1, 'not due again within the interval, on this worker or another');

    clock.advance(61_000);
    await new ReconciliationWorker(second.service, clock, 60, t.app.log).runOnce();
    assert.equal(await runsOf(tenant.tenantId), 2);
    assert.equal(await runsOf(other.tenantId), 2);
  });

  it('the schedule waits RUN_REST_FACTOR times a long run’s duration after it, past RECONCILE_INTERVAL_S; an operator is never held back', async () => {
    const slow = await fundedTenant(t, 7_000);
    const { service } = reconciliationService(t.db, clock, { intervalS: 60 });
    const worker = new ReconciliationWorker(service, clock, 60, t.app.log);
    const [first] = await service.request({ tenantId: slow.tenantId, mode: 'test' });
    await service.drain();
    // As if that run had taken 100 s: the next scheduled one waits 900 s after it ended, not 60.
    await t.db.query(
      `UPDATE reconciliation_runs SET started_at = finished_at - interval '100 seconds' WHERE tenant_id = $1 AND id = $2`,
      [slow.tenantId, first!.id],
    );
    const finishedAt = (await runRow(first!.id)).finished_at!.getTime();
    clock.set(new Date(finishedAt + 61_000));
    await worker.runOnce();
    assert.equal(await runsOf(slow.tenantId), 1, 'past the interval, but within nine times the run');
    clock.set(new Date(finishedAt + RUN_REST_FACTOR * 100_000 + 1_000));
    await worker.runOnce();
    assert.equal(await runsOf(slow.tenantId), 2, 'due again once it has rested nine times its duration');
    await service.request({ tenantId: slow.tenantId, mode: 'live' });
    assert.equal(await runsOf(slow.tenantId), 3, "an operator's request is queued at once");
    await service.drain();
  });

  it('a run whose worker died stays running only until its lease runs out, then is abandoned and a new one can start', async () => {
    const { service, observer } = reconciliationService(t.db, clock);
    const [queued] = await service.request({ tenantId: tenant.tenantId, mode: 'test' });
    // A worker claims it and dies before running it.
    const claimed = await claimQueuedRun(t.db, clock.now(), new Date(clock.now().getTime() + RUN_LEASE_MS));
    assert.equal(claimed?.id, queued!.id);
    const [open] = await service.request({ tenantId: tenant.tenantId, mode: 'test' });
    assert.deepEqual([open!.id, open!.status], [queued!.id, 'running'], 'still the one run of this tenant and mode');

    await service.drain();
    assert.equal((await runRow(queued!.id)).status, 'running', 'its lease has not run out');
    clock.advance(RUN_LEASE_MS + 1);
    await service.drain();
    const abandoned = await runRow(queued!.id);
    assert.equal(abandoned.status, 'abandoned');
    assert.match(abandoned.error!, /^abandoned: the process running it stopped \(its lease ran out at /);
    assert.ok(abandoned.finished_at);

    const [fresh] = await service.request({ tenantId: tenant.tenantId, mode: 'test' });
    assert.notEqual(fresh!.id, queued!.id);
    await service.drain();
    assert.equal((await runRow(fresh!.id)).status, 'completed');
    assert.deepEqual(observer.results, ['clean']);
  });

  it('a process that stops ends its run at the next page, as abandoned, with the checks it finished', async () => {
    const paused = pausingDatabase(t.db, 'between');
    // A row per page: each walk has pages left when the process stops.
    const { service, observer } = reconciliationService(paused.db, clock, {
      pageSizes: { payments: 1, transactions: 1 },
    });
    const [queued] = await service.request({ tenantId: tenant.tenantId, mode: 'test' });
    const draining = service.drain();
    await paused.paused;
    const stopping = service.stop();
    paused.release();
    await stopping;
    await draining;
    const run = await runRow(queued!.id);
    assert.deepEqual([run.status, run.error], ['abandoned', 'abandoned: the process running it was stopping']);
    assert.equal(run.checks.account_balances?.verdict, 'pass', 'the whole-book checks had run');
    assert.equal(run.checks.payment_entries?.verdict, 'not_run');
    assert.deepEqual(observer.results, ['abandoned']);
  });

  it('a run that lost its lease to another worker records nothing of its own', async () => {
    const paused = pausingDatabase(t.db, 'between');
    const { service, observer } = reconciliationService(paused.db, clock);
    const [queued] = await service.request({ tenantId: tenant.tenantId, mode: 'test' });
    const standing = async () =>
      (
        await t.db.query<{ last_run_id: string }>(
          `SELECT last_run_id FROM reconciliation_partitions WHERE tenant_id = $1 AND mode = 'test'`,
          [tenant.tenantId],
        )
      ).rows[0]?.last_run_id;
    const before = await standing();
    const draining = service.drain();
    await paused.paused;
    // Another worker, whose clock is past the lease, finds it expired.
    assert.deepEqual(await abandonExpiredRuns(t.db, new Date(clock.now().getTime() + RUN_LEASE_MS + 1), 10), [
      { tenant_id: tenant.tenantId, id: queued!.id },
    ]);
    paused.release();
    await draining;
    const run = await runRow(queued!.id);
    assert.equal(run.status, 'abandoned');
    assert.deepEqual(run.checks, {}, 'the lost run wrote no verdict');
    assert.equal(await standing(), before, "the tenant's standing is not this run's");
    assert.deepEqual(observer.results, ['abandoned']);
  });

  it('the discrepancies a run stores reach the anomalies hook in the run’s transaction, with a dedup key stable from run to run', async () => {
    const seen: Array<{ status: string; anomalies: DiscrepancyAnomaly[] }> = [];
    const { service } = reconciliationService(t.db, clock, {
      onDiscrepancies: async (tx, run, discrepancies) => {
        const { rows } = await tx.query<{ status: string }>(
          `SELECT status FROM reconciliation_runs WHERE tenant_id = $1 AND id = $2`,
          [run.tenantId, run.id],
        );
        seen.push({ status: rows[0]!.status, anomalies: discrepancyAnomalies(run, discrepancies) });
      },
    });
    await t.db.query(`UPDATE limit_usage SET count = count + 2 WHERE tenant_id = $1 AND subject_kind = 'tenant'`, [
      tenant.tenantId,
    ]);
    try {
      for (let i = 0; i < 2; i += 1) {
        await service.request({ tenantId: tenant.tenantId, mode: 'test' });
        await service.drain();
      }
    } finally {
      await t.db.query(`UPDATE limit_usage SET count = count - 2 WHERE tenant_id = $1 AND subject_kind = 'tenant'`, [
        tenant.tenantId,
      ]);
    }
    assert.equal(seen.length, 2);
    assert.equal(seen[0]!.status, 'completed', "inside the transaction that records the run's end");
    const [first] = seen[0]!.anomalies;
    assert.deepEqual(
      {
        kind: first!.kind,
        tenantId: first!.tenantId,
        mode: first!.mode,
        paymentId: first!.paymentId,
        ours: first!.ours,
        theirs: first!.theirs,
        check: first!.raw.check,
      },
      {
        kind: 'reconciliation_discrepancy',
        tenantId: tenant.tenantId,
        mode: 'test',
        paymentId: null,
        ours: { usage: '2000000/2' },
        theirs: { usage: '2000000/4' },
        check: 'limit_usage',
      },
    );
    assert.deepEqual(
      seen[1]!.anomalies.map((a) => a.dedupKey),
      seen[0]!.anomalies.map((a) => a.dedupKey),
      'the same disagreement found again is the same anomaly',
    );
    assert.notEqual(seen[0]!.anomalies[0]!.raw.runId, seen[1]!.anomalies[0]!.raw.runId);
  });
});
