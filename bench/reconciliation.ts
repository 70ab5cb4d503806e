// The reconciliation scenario (`reconciliation`): proofs that follow the day's work. A tenant seeded by
// SQL with a history of 1,000,000 payments (every entry, event, counter and balance; 100,000 with
// --quick), then, against the service running every role (ROLE=all, its schedule off so that the
// scenario says when a run starts):
//   1. a full run over that history (target ≤ 60 s);
//   2. 10,000 new payouts of the tenant at concurrency 64, settled, then an incremental run (≤ 2 s);
//   3. the payroll (bench/payroll.ts, ROLE=all) with the schedule off and with it proving every tenant
//      every second (RECONCILE_INTERVAL_S=1: incremental runs back to back, each resting nine times
//      its duration), alternated twice: what the proofs cost a payroll (≤ 10 %).
import { payoutRequests, runPayroll, type PayrollFigures } from './payroll.ts';
import { payrollTenant, startTopology, type PayrollContext } from './end-to-end.ts';
import { seedSql } from './seed-reconciliation.ts';

export const FULL_RUN_TARGET_S = 60;
export const INCREMENTAL_RUN_TARGET_S = 2;
export const PAYROLL_LOSS_TARGET = 0.1;
/** The wait for one run to end, at most. */
const RUN_TIMEOUT_MS = 15 * 60_000;
const RUN_POLL_MS = 200;
/** The wait for the new payouts to settle, at most. */
const SETTLE_TIMEOUT_MS = 180_000;
const CONCURRENCY = 64;

export interface ReconciliationOptions {
  payments: number;
  newPayouts: number;
  payrollPayouts: number;
}

export interface RunFigures {
  scope: string;
  seconds: number;
  clean: boolean;
  examined: Record<string, number>;
}

export interface ReconciliationFigures {
  seeded_payments: number;
  seed_seconds: number;
  full_run: RunFigures;
  new_payouts: number;
  incremental_run: RunFigures;
  /** The payroll's figures, schedule off and on, in the order run. */
  payroll: Array<{
    schedule: 'off' | 'every 1 s';
    submit_per_s: number;
    end_to_end_per_s: number;
    submit_p99_ms: number;
  }>;
  /** 1 − median(on) / median(off), of the end-to-end rate: what the proofs cost the payroll. */
  payroll_loss: number;
  targets: { full_run_s: number; incremental_run_s: number; payroll_loss: number };
}

/** Starts a run through the admin API and waits for its end. */
async function timedRun(
  ctx: PayrollContext,
  origin: string,
  tenantId: string,
  scope: 'full' | 'incremental',
): Promise<RunFigures> {
  const started = await ctx.api(origin, ctx.platformKey, 'POST', '/v1/admin/reconciliation/runs', {
    tenantId,
    mode: 'test',
    scope,
  });
  const id = started.data[0].id as string;
  const deadline = Date.now() + RUN_TIMEOUT_MS;
  for (;;) {
    const run = await ctx.api(origin, ctx.platformKey, 'GET', `/v1/admin/reconciliation/runs/${id}`);
    if (run.status !== 'queued' && run.status !== 'running') {
      if (run.status !== 'completed')
        throw new Error(`reconciliation: the ${scope} run ended ${run.status}: ${run.error}`);
      const seconds = (Date.parse(run.finishedAt) - Date.parse(run.startedAt)) / 1000;
      return { scope: run.scope, seconds, clean: run.clean, examined: run.examined };
    }
    if (Date.now() > deadline)
      throw new Error(`reconciliation: the ${scope} run did not end within ${RUN_TIMEOUT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, RUN_POLL_MS));
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export async function runReconciliation(
  ctx: PayrollContext,
  options: ReconciliationOptions,
): Promise<ReconciliationFigures> {
  const quiet = { ...ctx, env: { ...ctx.env, RECONCILE_INTERVAL_S: '0' } };
  const { origin, processes } = await startTopology(quiet, 'all');
  let full: RunFigures;
  let incremental: RunFigures;
  let seedSeconds: number;
  try {
    const tenant = await payrollTenant(ctx, origin, 'bench-reconciliation');
    const seedStarted = performance.now();
    await ctx.db.query('BEGIN');
    try {
      await ctx.db.query('SET LOCAL session_replication_role = replica');
      for (const sql of seedSql(options.payments))
        await ctx.db.query(sql, sql.includes('$1') ? [tenant.tenantId] : undefined);
      await ctx.db.query('COMMIT');
    } catch (error) {
      await ctx.db.query('ROLLBACK');
      throw error;
    }
    await ctx.db.query(
      'VACUUM ANALYZE payments, ledger_transactions, ledger_postings, outbox_events, limit_usage, ledger_accounts',
    );
    seedSeconds = (performance.now() - seedStarted) / 1000;
    ctx.log(`reconciliation: ${options.payments} payments seeded in ${seedSeconds.toFixed(1)} s`);

    full = await timedRun(ctx, origin, tenant.tenantId, 'full');
    ctx.log(
      `reconciliation: full run over ${full.examined.payments} payments in ${full.seconds.toFixed(2)} s (target ≤ ${FULL_RUN_TARGET_S} s), clean ${full.clean}`,
    );

    const requests = await payoutRequests(ctx, tenant, options.newPayouts);
    const since = new Date();
    const result = await ctx.load({
      origin,
      concurrency: CONCURRENCY,
      warmupMs: 0,
      durationMs: 0,
      drain: true,
      expectStatus: [201],
      requests,
    });
    const deadline = Date.now() + SETTLE_TIMEOUT_MS;
    for (;;) {
      const { rows } = await ctx.db.query<{ open: string }>(
        `SELECT count(*) FILTER (WHERE status IN ('pending', 'submitted', 'unknown')) AS open FROM payments WHERE tenant_id = $1 AND created_at >= $2`,
        [tenant.tenantId, since],
      );
      if (Number(rows[0]!.open) === 0) break;
      if (Date.now() > deadline)
        throw new Error(`reconciliation: ${rows[0]!.open} new payouts still open after ${SETTLE_TIMEOUT_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, RUN_POLL_MS));
    }
    ctx.log(
      `reconciliation: ${options.newPayouts} new payouts at ${Math.round(result.throughputPerS)}/s, errors ${result.errors}, all resolved`,
    );
    incremental = await timedRun(ctx, origin, tenant.tenantId, 'incremental');
    ctx.log(
      `reconciliation: incremental run over ${incremental.examined.payments} payments written since in ${incremental.seconds.toFixed(2)} s (target ≤ ${INCREMENTAL_RUN_TARGET_S} s), clean ${incremental.clean}`,
    );
  } finally {
    for (const p of processes) await ctx.stop(p.child);
  }

  // What the proofs cost a payroll: the schedule off, then on, twice. Each payroll is a fresh
  // tenant; with the schedule on, every tenant (the seeded one included) is proven as it goes.
  const payroll: ReconciliationFigures['payroll'] = [];
  for (const round of [1, 2]) {
    for (const schedule of ['off', 'every 1 s'] as const) {
      const env = { ...ctx.env, RECONCILE_INTERVAL_S: schedule === 'off' ? '0' : '1' };
      const figures: PayrollFigures = await runPayroll(
        { ...ctx, env },
        'all',
        options.payrollPayouts,
        `reconciliation-payroll-${round}-${schedule === 'off' ? 'off' : 'on'}`,
      );
      payroll.push({
        schedule,
        submit_per_s: figures.submit_throughput_per_s,
        end_to_end_per_s: figures.end_to_end_per_s,
        submit_p99_ms: figures.submit_p99_ms,
      });
    }
  }
  const rate = (schedule: 'off' | 'every 1 s') =>
    median(payroll.filter((p) => p.schedule === schedule).map((p) => p.end_to_end_per_s));
  const loss = Number((1 - rate('every 1 s') / rate('off')).toFixed(3));
  ctx.log(
    `reconciliation: payroll end to end ${rate('off')}/s with the schedule off, ${rate('every 1 s')}/s proving every tenant every second: loss ${(loss * 100).toFixed(1)} % (target ≤ ${PAYROLL_LOSS_TARGET * 100} %)`,
  );
  return {
    seeded_payments: options.payments,
    seed_seconds: Number(seedSeconds.toFixed(1)),
    full_run: full,
    new_payouts: options.newPayouts,
    incremental_run: incremental,
    payroll,
    payroll_loss: loss,
    targets: {
      full_run_s: FULL_RUN_TARGET_S,
      incremental_run_s: INCREMENTAL_RUN_TARGET_S,
      payroll_loss: PAYROLL_LOSS_TARGET,
    },
  };
}

export function describeReconciliation(r: ReconciliationFigures): string {
  const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
  return (
    `reconciliation (${r.seeded_payments} payments seeded in ${r.seed_seconds} s): full run ${r.full_run.seconds.toFixed(2)} s ` +
    `(≤ ${r.targets.full_run_s} s: ${met(r.full_run.seconds <= r.targets.full_run_s)}); incremental run after ${r.new_payouts} payouts ${r.incremental_run.seconds.toFixed(2)} s ` +
    `over ${r.incremental_run.examined.payments} payments (≤ ${r.targets.incremental_run_s} s: ${met(r.incremental_run.seconds <= r.targets.incremental_run_s)}); ` +
    `payroll loss with proofs every second ${(r.payroll_loss * 100).toFixed(1)} % (≤ ${r.targets.payroll_loss * 100} %: ${met(r.payroll_loss <= r.targets.payroll_loss)}); ` +
    `payrolls ${r.payroll.map((p) => `${p.schedule} ${p.end_to_end_per_s}/s`).join(', ')}\n`
  );
}
