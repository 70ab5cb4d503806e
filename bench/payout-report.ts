// The payout report scenario (`payout-report`): GET /v1/reports/payouts for a tenant with a year of
// payouts (1,000,000 by default), beside neighbours whose payments share the tables, with the service
// running every role (ROLE=all) as the payroll runs it. For each range the console offers (today by
// hour, 7 days by hour, 30 days by day) and the longest ones (366 days by day; the platform key's
// 30 days over every tenant): sequential requests after a warm-up, then 4 at a time, each against
// the requirement (≤ 200 ms p99). Last, EXPLAIN (ANALYZE, BUFFERS) of each part of the 30-day report
// (payments, webhook attempts, balances) and of the 366-day payments part, run on the same data.
import os from 'node:os';
import type { Queryable, QueryResult } from '../src/db/database.ts';
import { balancesAt, reportAggregates } from '../src/db/repositories/payout-report.ts';
import { rollupsBuilt } from '../src/db/repositories/report-rollups.ts';
import { ROLLUPS_BUILT_SQL } from '../src/db/repositories/report-sql.ts';
import type { ReportScope } from '../src/db/repositories/payout-report-rows.ts';
import { businessDate } from '../src/domain/caracas-time.ts';
import { reportRangeOf, type ReportGranularity, type ReportRange } from '../src/domain/payout-report.ts';
import { startTopology, type PayrollContext } from './end-to-end.ts';
import type { LoadJob, LoadResult, ScenarioFigures } from './load.ts';
import {
  SEED_DAYS,
  seedBalanceHistory,
  seedBeneficiaries,
  seedPayments,
  withIndexesBuiltAfter,
} from './seed-payout-report.ts';

/** The requirement: the report in ≤ 200 ms p99 for a tenant with 1,000,000 payments. */
export const REPORT_P99_TARGET_MS = 200;
const DAY_MS = 86_400_000;

export interface PayoutReportOptions {
  /** The bench's api process, for the admin calls that create the tenants. */
  adminOrigin: string;
  payments: number;
  /** Payments of each of the two neighbour tenants. */
  neighbourPayments: number;
  beneficiaries: number;
  /** Time given to each sequential series (fewer requests when each takes longer); the concurrent run's window. */
  sequentialBudgetMs: number;
  concurrentMs: number;
  warmupRequests: number;
  ceilingPerS: number;
}

export interface ReportSeries extends ScenarioFigures {
  range: string;
  concurrency: number;
  requests: number;
  payments_in_range: number;
  /** Answers by HTTP status (a statement past DB_STATEMENT_TIMEOUT_MS is answered 503). */
  statuses: Record<string, number>;
  target_p99_ms: number;
  target_met: boolean;
  load_average: [number, number];
}

export interface PayoutReportFigures {
  payments: number;
  neighbour_payments: number;
  seed_seconds: number;
  vacuum_analyze_seconds: number;
  /** From the service's start to the worker's first fold having built the rollups of the seeded data. */
  rollup_build_seconds: number;
  rows: Record<string, number>;
  series: Record<string, ReportSeries>;
  explain: Record<string, string>;
}

interface Series {
  name: string;
  label: string;
  from: string;
  to: string;
  granularity: ReportGranularity;
  platform: boolean;
}

const daysBefore = (day: string, n: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) - n * DAY_MS).toISOString().slice(0, 10);

function seriesOf(today: string): Series[] {
  return [
    { name: 'report_today_hour', label: 'today by hour', from: today, to: today, granularity: 'hour', platform: false },
    {
      name: 'report_7d_hour',
      label: '7 days by hour',
      from: daysBefore(today, 6),
      to: today,
      granularity: 'hour',
      platform: false,
    },
    {
      name: 'report_30d_hour',
      label: '30 days by hour',
      from: daysBefore(today, 29),
      to: today,
      granularity: 'hour',
      platform: false,
    },
    {
      name: 'report_30d_day',
      label: '30 days by day',
      from: daysBefore(today, 29),
      to: today,
      granularity: 'day',
      platform: false,
    },
    {
      name: 'report_366d_day',
      label: '366 days by day',
      from: daysBefore(today, 365),
      to: today,
      granularity: 'day',
      platform: false,
    },
    {
      name: 'report_platform_30d_day',
      label: 'platform, every tenant, 30 days by day',
      from: daysBefore(today, 29),
      to: today,
      granularity: 'day',
      platform: true,
    },
  ];
}

const pathOf = (s: Series) =>
  `/v1/reports/payouts?from=${s.from}&to=${s.to}&granularity=${s.granularity}${s.platform ? '&mode=test' : ''}`;

/** The tenants (created through the admin API, funded), their payments, events, deliveries and balances. */
async function seed(
  ctx: PayrollContext,
  options: PayoutReportOptions,
  t0: Date,
): Promise<{ tenantId: string; key: string }> {
  const origin = options.adminOrigin;
  const platformKey = ctx.platformKey;
  const tenants: Array<{ id: string; keyId: string | null; key: string; payments: number; beneficiaries: number }> = [];
  for (const [i, name] of [
    'Bench Payout Report',
    'Bench Payout Report neighbour 1',
    'Bench Payout Report neighbour 2',
  ].entries()) {
    const tenant = await ctx.api(origin, platformKey, 'POST', '/v1/admin/tenants', { name });
    const issued = await ctx.api(origin, platformKey, 'POST', `/v1/admin/tenants/${tenant.id}/api-keys`, {
      mode: 'test',
    });
    await ctx.api(
      origin,
      platformKey,
      'POST',
      `/v1/admin/tenants/${tenant.id}/fundings`,
      { mode: 'test', asset: 'BS', amount: 30_000_000_000 },
      { 'idempotency-key': `report-funding-${i}` },
    );
    tenants.push({
      id: tenant.id,
      keyId: issued.id ?? null,
      key: issued.key,
      payments: i === 0 ? options.payments : options.neighbourPayments,
      beneficiaries: i === 0 ? options.beneficiaries : 300,
    });
  }
  const ids = tenants.map((t) => t.id);
  const yearBefore = new Date(t0.getTime() - (SEED_DAYS + 1) * DAY_MS);
  // The service has run for the seeded year: the tenants, their keys and the balance history are as old as it.
  await ctx.db.query('UPDATE tenants SET created_at = $2 WHERE id = ANY ($1::uuid[])', [ids, yearBefore]);
  await ctx.db.query('UPDATE api_keys SET created_at = $2 WHERE tenant_id = ANY ($1::uuid[])', [ids, yearBefore]);
  await ctx.db.query(
    `UPDATE app_state SET value = to_jsonb($1::timestamptz) WHERE key = 'balance_history_started_at'`,
    [yearBefore],
  );
  for (const t of tenants) {
    await seedBeneficiaries(ctx.db, t.id, t.beneficiaries, yearBefore);
    const { rows } = await ctx.db.query<{ at: Date }>(
      `SELECT balance_changed_at AS at FROM ledger_accounts WHERE tenant_id = $1 AND mode = 'test' AND kind = 'prefunding'`,
      [t.id],
    );
    await seedBalanceHistory(ctx.db, t.id, t0, rows[0]!.at);
  }
  await withIndexesBuiltAfter(
    ctx.db,
    async () => {
      for (const [i, t] of tenants.entries()) await seedPayments(ctx.db, t.id, t.keyId, t.payments, t0, i + 1, ctx.log);
    },
    ctx.log,
  );
  return { tenantId: tenants[0]!.id, key: tenants[0]!.key };
}

/** The bounds of the instants whose balances the report reads: each begun bucket's end, or now. */
function balanceInstants(range: ReportRange, now: Date): Date[] {
  return range.bucketStarts
    .map((start, i) => ({ start, end: range.bucketStarts[i + 1] ?? range.end }))
    .filter(({ start }) => start.getTime() <= now.getTime())
    .map(({ end }) => (end.getTime() > now.getTime() ? now : end));
}

/** The report's queries exactly as the service sends them once its rollups are built, captured from its repository. */
async function reportQueries(
  scope: ReportScope,
  range: ReportRange,
  now: Date,
): Promise<Record<'payments' | 'timing' | 'webhooks' | 'balances', { sql: string; params: readonly unknown[] }>> {
  const captured: Array<{ sql: string; params: readonly unknown[] }> = [];
  const capture: Queryable = {
    async query<Row>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<Row>> {
      // The probe whether the rollups are built: they are.
      if (sql === ROLLUPS_BUILT_SQL) return { rows: [{ built: true } as Row], rowCount: 1 };
      captured.push({ sql, params });
      // The balances' statement answers one row of JSON; the others, rows of figures: none here.
      return sql.includes('ledger_balance_history')
        ? { rows: [{ rows: [] } as Row], rowCount: 1 }
        : { rows: [], rowCount: 0 };
    },
    async exec() {},
  };
  const window = {
    start: range.start,
    end: range.end,
    bucketStarts: range.bucketStarts,
    granularity: range.granularity,
  };
  await reportAggregates(capture, scope, window);
  await balancesAt(capture, scope, balanceInstants(range, now));
  return { payments: captured[0]!, timing: captured[1]!, webhooks: captured[2]!, balances: captured[3]! };
}

async function explain(ctx: PayrollContext, query: { sql: string; params: readonly unknown[] }): Promise<string> {
  const { rows } = await ctx.db.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN (ANALYZE, BUFFERS) ${query.sql}`,
    query.params as unknown[],
  );
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

async function explainAll(ctx: PayrollContext, tenantId: string, today: string): Promise<Record<string, string>> {
  const now = new Date();
  const scope: ReportScope = { tenantId, mode: 'test' };
  const range30 = reportRangeOf({ from: daysBefore(today, 29), to: today, granularity: 'day' }) as ReportRange;
  const range366 = reportRangeOf({ from: daysBefore(today, 365), to: today, granularity: 'day' }) as ReportRange;
  const q30 = await reportQueries(scope, range30, now);
  const q366 = await reportQueries(scope, range366, now);
  return {
    payments_30d: await explain(ctx, q30.payments),
    timing_30d: await explain(ctx, q30.timing),
    webhooks_30d: await explain(ctx, q30.webhooks),
    balances_30d: await explain(ctx, q30.balances),
    payments_366d: await explain(ctx, q366.payments),
    timing_366d: await explain(ctx, q366.timing),
    webhooks_366d: await explain(ctx, q366.webhooks),
    balances_366d: await explain(ctx, q366.balances),
  };
}

async function paymentsInRange(ctx: PayrollContext, s: Series, tenantId: string): Promise<number> {
  const range = reportRangeOf(s) as ReportRange;
  const { rows } = await ctx.db.query<{ n: string }>(
    `SELECT count(*) AS n FROM payments p JOIN tenants t ON t.id = p.tenant_id
      WHERE p.mode = 'test' AND p.created_at >= $2 AND p.created_at < $3 AND CASE WHEN $1::uuid IS NULL THEN NOT t.is_platform ELSE t.id = $1::uuid END`,
    [s.platform ? null : tenantId, range.start, range.end],
  );
  return Number(rows[0]!.n);
}

function figures(
  result: LoadResult,
  s: Series,
  concurrency: number,
  inRange: number,
  ceilingPerS: number,
  load: [number, number],
): ReportSeries {
  return {
    range: s.label,
    concurrency,
    requests: result.requests,
    payments_in_range: inRange,
    statuses: result.statuses,
    throughput_per_s: Number(result.throughputPerS.toFixed(1)),
    p50_ms: Number(result.p50Ms.toFixed(2)),
    p99_ms: Number(result.p99Ms.toFixed(2)),
    errors: result.errors,
    ceiling_throughput_per_s: Math.round(ceilingPerS),
    ratio: Number((result.throughputPerS / ceilingPerS).toFixed(4)),
    target_p99_ms: REPORT_P99_TARGET_MS,
    target_met: result.errors === 0 && result.p99Ms <= REPORT_P99_TARGET_MS,
    load_average: load,
  };
}

/** One range: a warm-up (1 to `warmupRequests`), sequential requests (as many as fit the budget, 5 to 200), then 4 at a time (8 to 200). */
async function measureSeries(
  ctx: PayrollContext,
  options: PayoutReportOptions,
  origin: string,
  s: Series,
  key: string,
  inRange: number,
): Promise<ReportSeries[]> {
  const request = { method: 'GET' as const, path: pathOf(s), headers: { 'x-api-key': key } };
  const job = (n: number): LoadJob => ({
    origin,
    concurrency: 1,
    warmupMs: 0,
    durationMs: 0,
    drain: true,
    expectStatus: [200],
    requests: Array<typeof request>(n).fill(request),
  });
  // Warm-up: one request, then the rest only if it was short (a 366-day report warms up in one).
  let warm = await ctx.load(job(1));
  if (warm.meanMs < 1000 && options.warmupRequests > 1) warm = await ctx.load(job(options.warmupRequests - 1));
  const fit = (budgetMs: number, min: number) =>
    Math.max(min, Math.min(200, Math.round(budgetMs / Math.max(1, warm.meanMs))));
  const load0 = os.loadavg()[0]!;
  const sequential = await ctx.load(job(fit(options.sequentialBudgetMs, 5)));
  const load1 = os.loadavg()[0]!;
  // 4 at a time, every request measured to its end (a time window would drop the long ones in flight at its end).
  const concurrent = await ctx.load({ ...job(fit(4 * options.concurrentMs, 8)), concurrency: 4 });
  const load2 = os.loadavg()[0]!;
  const round = (x: number) => Number(x.toFixed(2));
  const out = [
    figures(sequential, s, 1, inRange, options.ceilingPerS, [round(load0), round(load1)]),
    figures(concurrent, s, 4, inRange, options.ceilingPerS, [round(load1), round(load2)]),
  ];
  ctx.log(
    `payout-report ${s.label}: ${inRange} payments; sequential ${sequential.requests} p50 ${sequential.p50Ms.toFixed(1)} ms p99 ${sequential.p99Ms.toFixed(1)} ms; ` +
      `c4 ${concurrent.throughputPerS.toFixed(1)}/s p50 ${concurrent.p50Ms.toFixed(1)} ms p99 ${concurrent.p99Ms.toFixed(1)} ms; errors ${sequential.errors + concurrent.errors}; load ${load0.toFixed(1)}`,
  );
  return out;
}

/** The answer counts every payment of the range: the report and the table agree before anything is timed. */
async function checkAnswer(
  ctx: PayrollContext,
  origin: string,
  s: Series,
  key: string,
  inRange: number,
): Promise<void> {
  const report = await ctx.api(origin, key, 'GET', pathOf(s));
  if (report.totals.count !== inRange)
    throw new Error(
      `payout-report ${s.label}: the report counts ${report.totals.count} payments, the range holds ${inRange}`,
    );
}

export async function runPayoutReport(ctx: PayrollContext, options: PayoutReportOptions): Promise<PayoutReportFigures> {
  const t0 = new Date();
  const today = businessDate(t0);
  const seedStarted = performance.now();
  const { tenantId, key } = await seed(ctx, options, t0);
  const seedSeconds = (performance.now() - seedStarted) / 1000;
  const vacuumStarted = performance.now();
  for (const table of ['payments', 'outbox_events', 'webhook_deliveries', 'ledger_balance_history', 'beneficiaries'])
    await ctx.db.query(`VACUUM (ANALYZE) ${table}`);
  const vacuumSeconds = (performance.now() - vacuumStarted) / 1000;
  const { rows: counted } = await ctx.db.query<{ name: string; n: string }>(
    `SELECT 'payments' AS name, count(*) AS n FROM payments UNION ALL SELECT 'outbox_events', count(*) FROM outbox_events
     UNION ALL SELECT 'webhook_deliveries', count(*) FROM webhook_deliveries UNION ALL SELECT 'ledger_balance_history', count(*) FROM ledger_balance_history`,
  );
  const rows = Object.fromEntries(counted.map((r) => [r.name, Number(r.n)]));
  ctx.log(
    `payout-report: seeded in ${seedSeconds.toFixed(1)} s, VACUUM ANALYZE ${vacuumSeconds.toFixed(1)} s; tables now ${JSON.stringify(rows)}`,
  );
  // The seed wrote payments and attempts without their history, as a database from before the
  // rollups existed: the worker's report fold builds them at its first pass (reports meanwhile read
  // the payments themselves). The build is timed: it is what an upgrade of such a database costs once.
  await ctx.db.query('UPDATE report_fold SET folded = NULL');
  const buildStarted = performance.now();
  const { origin, processes } = await startTopology(ctx, 'all');
  const series: Record<string, ReportSeries> = {};
  let buildSeconds = 0;
  try {
    buildSeconds = await waitForRollups(ctx, buildStarted);
    for (const s of seriesOf(today)) {
      const seriesKey = s.platform ? ctx.platformKey : key;
      const inRange = await paymentsInRange(ctx, s, tenantId);
      await checkAnswer(ctx, origin, s, seriesKey, inRange);
      await ctx.quiesce();
      const [sequential, concurrent] = await measureSeries(ctx, options, origin, s, seriesKey, inRange);
      series[s.name] = sequential!;
      series[`${s.name}_c4`] = concurrent!;
    }
  } finally {
    for (const p of processes) await ctx.stop(p.child);
  }
  const plans = await explainAll(ctx, tenantId, today);
  return {
    payments: options.payments,
    neighbour_payments: options.neighbourPayments,
    seed_seconds: Number(seedSeconds.toFixed(1)),
    vacuum_analyze_seconds: Number(vacuumSeconds.toFixed(1)),
    rollup_build_seconds: Number(buildSeconds.toFixed(1)),
    rows,
    series,
    explain: plans,
  };
}

/** The longest the first build of the rollups may take here (it reads every seeded payment and attempt once). */
const ROLLUP_BUILD_WAIT_MS = 20 * 60_000;
const ROLLUP_POLL_MS = 500;

/** Waits for the worker's first fold to build the rollups; then the rollup tables are analyzed, as autovacuum would. */
async function waitForRollups(ctx: PayrollContext, startedAt: number): Promise<number> {
  for (;;) {
    if (await rollupsBuilt(ctx.db)) break;
    if (performance.now() - startedAt > ROLLUP_BUILD_WAIT_MS)
      throw new Error(`payout-report: the rollups were not built within ${ROLLUP_BUILD_WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, ROLLUP_POLL_MS));
  }
  const seconds = (performance.now() - startedAt) / 1000;
  for (const table of ['report_payment_counts', 'report_outcome_times', 'report_webhook_attempts'])
    await ctx.db.query(`VACUUM (ANALYZE) ${table}`);
  const { rows } = await ctx.db.query<{ n: string }>(
    'SELECT (SELECT count(*) FROM report_payment_counts) + (SELECT count(*) FROM report_outcome_times) + (SELECT count(*) FROM report_webhook_attempts) AS n',
  );
  ctx.log(`payout-report: the report fold built the rollups in ${seconds.toFixed(1)} s (${rows[0]!.n} rollup rows)`);
  return seconds;
}

/** The table's lines after the scenarios: each series against the 200 ms p99 target. */
export function describePayoutReport(figures: PayoutReportFigures): string {
  const lines = [
    `\npayout report (${figures.payments.toLocaleString('en')} payments of one tenant over ${SEED_DAYS} days, ROLE=all; target p99 ≤ ${REPORT_P99_TARGET_MS} ms):`,
  ];
  for (const [name, s] of Object.entries(figures.series)) {
    lines.push(
      `  ${name.padEnd(28)} ${s.range.padEnd(40)} c${s.concurrency}  ${String(s.payments_in_range).padStart(8)} payments  n ${String(s.requests).padStart(4)}  ` +
        `p50 ${s.p50_ms.toFixed(1).padStart(7)} ms  p99 ${s.p99_ms.toFixed(1).padStart(7)} ms  ${s.throughput_per_s.toFixed(1).padStart(6)}/s  ${s.target_met ? 'met' : 'NOT MET'}  (load ${s.load_average[0]})`,
    );
  }
  lines.push(`\nEXPLAIN (ANALYZE, BUFFERS) of the 30-day report's payment aggregate:\n${figures.explain.payments_30d}`);
  return lines.join('\n') + '\n';
}
