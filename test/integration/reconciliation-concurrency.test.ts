// Reconciliation beside real traffic, on PostgreSQL: a run's open snapshot holds no payout back, runs
// made while payouts and their outcomes commit find nothing wrong (a payment that changes between two
// pages is never half seen), and two processes sharing the database run each queued run once.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { systemClock } from '../../src/domain/clock.ts';
import { ENGINE, startInstances, startTestApp, type Instances, type TestApp } from '../support/harness.ts';
import {
  AMPLE_RAIL_TIMEOUT_MS,
  beneficiary,
  type FundedTenant,
  fundedTenant,
  payout,
  reaperOf,
} from '../support/payouts.ts';
import { pausingDatabase, reconciliationService } from '../support/reconciliation.ts';

const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '50',
  SANDBOX_REVERSE_DELAY_MS: '100',
  SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
  REAPER_INTERVAL_MS: '20',
  RECONCILE_INTERVAL_S: '0',
  ROLE: 'api',
};
/** A payout while a run holds its snapshot open answers within this (it waits for nothing the run holds). */
const PAYOUT_BESIDE_RUN_MAX_MS = 5_000;
/** Runs made while the traffic lasts, at most. */
const RUNS_BESIDE_TRAFFIC_MAX = 200;
const TRIGGERS = [
  'V99990001',
  'V99990002',
  'V99990003',
  'V99990004',
  'V99990006',
  'V99990007',
  'V30000001',
  'V30000002',
];

describe(
  `reconciliation beside traffic on ${ENGINE}`,
  { skip: ENGINE !== 'postgres' && 'PostgreSQL only: PGlite has one connection, so nothing runs beside a transaction' },
  () => {
    let t: TestApp;
    let tenant: FundedTenant;

    before(async () => {
      t = await startTestApp({ env: ENV });
      tenant = await fundedTenant(t);
    });
    after(async () => {
      await t.close();
    });

    it('a payout and its settlement commit while a run holds its snapshot open; the run, reading that snapshot, is clean', async () => {
      const paused = pausingDatabase(t.db, 'inside');
      const { service, observer } = reconciliationService(paused.db, systemClock);
      const [run] = await service.request({ tenantId: tenant.tenantId, mode: 'test' });
      const draining = service.drain();
      await paused.paused;
      const startedMs = Date.now();
      try {
        const made = await payout(tenant.api, { beneficiary: beneficiary('V99990001') });
        assert.equal(made.status, 201, made.raw);
        assert.equal(
          made.body.status,
          'settled',
          'charged and settled: both batches wrote the ledger accounts the run is reading',
        );
      } finally {
        paused.release();
      }
      const elapsedMs = Date.now() - startedMs;
      assert.ok(elapsedMs < PAYOUT_BESIDE_RUN_MAX_MS, `the payout took ${elapsedMs} ms beside the open snapshot`);
      await draining;
      const { run: done } = await service.get(run!.id);
      assert.deepEqual([done.status, Number(done.discrepancy_count)], ['completed', 0]);
      assert.deepEqual(observer.results, ['clean']);
    });

    it('runs of many small pages, made while payouts and their outcomes commit, find nothing wrong', async () => {
      const { service, observer } = reconciliationService(t.db, systemClock, {
        pageSizes: { payments: 5, transactions: 7 },
      });
      const reaper = reaperOf(t);
      let traffic = true;
      const reaping = (async () => {
        while (traffic) await reaper.runOnce();
      })();
      let paid = false;
      const paying = (async () => {
        for (let round = 0; round < 8; round += 1) {
          const made = await Promise.all(TRIGGERS.map((id) => payout(tenant.api, { beneficiary: beneficiary(id) })));
          for (const m of made) assert.equal(m.status, 201, m.raw);
        }
      })().finally(() => (paid = true));
      const runs: string[] = [];
      try {
        // Run after run for as long as the traffic lasts (a bounded number of them).
        while ((!paid || runs.length < 4) && runs.length < RUNS_BESIDE_TRAFFIC_MAX) {
          const [run] = await service.request({ tenantId: tenant.tenantId, mode: 'test' });
          runs.push(run!.id);
          await service.drain();
        }
        await paying;
      } finally {
        traffic = false;
        await reaping;
      }
      const seen = new Set<number>();
      for (const id of runs) {
        const { run, discrepancies } = await service.get(id);
        seen.add(run.examined.payments ?? 0);
        assert.equal(run.status, 'completed', run.error ?? '');
        assert.deepEqual(
          discrepancies.map((d) => `${d.check_name} ${d.subject_id} ${d.facet}: ${d.expected} -> ${d.found}`),
          [],
        );
      }
      assert.deepEqual(
        observer.results,
        runs.map(() => 'clean'),
      );
      assert.ok(
        seen.size >= 3,
        `the runs saw the payments grow: ${[...seen].join(', ')} payments in ${runs.length} runs`,
      );
      const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1`, [
        tenant.tenantId,
      ]);
      assert.ok(rows[0]!.n >= 8 * TRIGGERS.length, 'the traffic happened');
    });
  },
);

describe(
  `reconciliation by two processes on ${ENGINE}`,
  { skip: ENGINE !== 'postgres' && 'PostgreSQL only: several processes share a server' },
  () => {
    let instances: Instances;
    let tenants: FundedTenant[];

    before(async () => {
      instances = await startInstances(2, { env: ENV });
      tenants = [];
      // Each instance set its own platform key; the last one set is the one in force.
      for (let i = 0; i < 6; i += 1)
        tenants.push(await fundedTenant(instances.apps[instances.apps.length - 1]!, 1_000_000 + i));
    });
    after(async () => {
      await instances.close();
    });

    it('ask at once for the same tenant and get the same run; drain at once and run each queued run exactly once', async () => {
      const [a, b] = instances.apps.map((app) => reconciliationService(app.db, systemClock)) as [
        ReturnType<typeof reconciliationService>,
        ReturnType<typeof reconciliationService>,
      ];
      const asked = await Promise.all(
        [a, b, a, b].map((s) => s.service.request({ tenantId: tenants[0]!.tenantId, mode: 'test' })),
      );
      assert.equal(new Set(asked.map(([run]) => run!.id)).size, 1, 'one run for one tenant and mode');

      for (const tenant of tenants.slice(1))
        await (tenant.tenantId.charCodeAt(0) % 2 ? a : b).service.request({ tenantId: tenant.tenantId, mode: 'test' });
      await Promise.all([a.service.drain(), b.service.drain(), a.service.drain(), b.service.drain()]);
      const db = instances.apps[0]!.db;
      const { rows } = await db.query<{ status: string; n: number }>(
        `SELECT status, count(*)::int AS n FROM reconciliation_runs GROUP BY status`,
      );
      assert.deepEqual(rows, [{ status: 'completed', n: 6 }]);
      assert.equal(
        a.observer.results.length + b.observer.results.length,
        6,
        'each run ran once, on one process or the other',
      );
      assert.ok([...a.observer.results, ...b.observer.results].every((r) => r === 'clean'));
    });
  },
);
