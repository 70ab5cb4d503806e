// The payroll scenario: what an integrator paying a payroll one request per payout measures. One
// tenant submits N payouts (pre-created quotes, one beneficiary, default outcome) at concurrency 64,
// timed from the first request to the last `payment.settled` webhook (bench/end-to-end.ts).
import type { LoadResult, ScenarioFigures } from './load.ts';
import {
  payrollTenant,
  runEndToEnd,
  startTopology,
  type EndToEndFigures,
  type PayrollContext,
  type PayrollTenant,
  type Topology,
} from './end-to-end.ts';

const CONCURRENCY = 64;

export interface PayrollFigures extends EndToEndFigures {
  submit_throughput_per_s: number;
  submit_p50_ms: number;
  submit_p99_ms: number;
  errors: number;
  statuses: Record<string, number>;
  submit_ratio: number;
}

/**
 * `count` open quotes of the tenant, each the body of one `POST /v1/payouts` with its own key
 * (`<prefix>-<i>`, the tenant's name by default).
 */
export async function payoutRequests(ctx: PayrollContext, tenant: PayrollTenant, count: number, prefix = tenant.name) {
  const quotes = await ctx.seedQuotes(tenant.tenantId, count);
  const headers = { 'x-api-key': tenant.key, 'content-type': 'application/json' };
  return quotes.map((quoteId, i) => ({
    method: 'POST' as const,
    path: '/v1/payouts',
    headers: { ...headers, 'idempotency-key': `${prefix}-${i}` },
    body: JSON.stringify({ quoteId, method: 'pago_movil', beneficiaryId: tenant.beneficiaryId, sender: ctx.sender }),
  }));
}

/** `name` tells runs apart in logs, tenant names and metrics files (`payroll-pooler` behind PgBouncer). */
export async function runPayroll(
  ctx: PayrollContext,
  topology: Topology,
  payouts: number,
  name = 'payroll',
): Promise<PayrollFigures> {
  const { submitted, figures } = await runEndToEnd(ctx, topology, {
    name,
    payouts,
    prepare: (tenant) => payoutRequests(ctx, tenant, payouts),
    submit: async (origin, requests): Promise<LoadResult> => {
      const result = await ctx.load({
        origin,
        concurrency: CONCURRENCY,
        warmupMs: 0,
        durationMs: 0,
        drain: true,
        expectStatus: [201],
        requests,
      });
      ctx.log(
        `${name} (${topology}): ${payouts} submitted at ${Math.round(result.throughputPerS)}/s (ratio ${(result.throughputPerS / ctx.ceilingPerS).toFixed(2)}), p99 ${result.p99Ms.toFixed(1)} ms, errors ${result.errors} ${JSON.stringify(result.statuses)}`,
      );
      return result;
    },
  });
  return {
    ...figures,
    submit_throughput_per_s: Math.round(submitted.throughputPerS),
    submit_p50_ms: Number(submitted.p50Ms.toFixed(2)),
    submit_p99_ms: Number(submitted.p99Ms.toFixed(2)),
    errors: submitted.errors,
    statuses: submitted.statuses,
    submit_ratio: Number((submitted.throughputPerS / ctx.ceilingPerS).toFixed(2)),
  };
}

export interface SoakFigures extends ScenarioFigures {
  topology: 'api+worker';
  seconds: number;
  warmup_seconds: number;
  /** Per process: RSS every 10 s from the start of the warm-up, and growth from its end to the end. */
  rss: Record<
    string,
    { mb_samples: number[]; mb_before: number; mb_after: number; growth: number; growth_second_half: number }
  >;
}

const RSS_SAMPLE_MS = 10_000;

/**
 * Memory over a long run, in the payroll setup: an api process and a worker settling and notifying
 * what the api accepts, payouts at concurrency 64 for `seconds` after a warm-up.
 */
export async function runSoak(
  ctx: PayrollContext,
  seconds: number,
  warmupMs: number,
  payoutsPerS: number,
): Promise<SoakFigures> {
  const { origin, processes } = await startTopology(ctx, 'api+worker');
  try {
    const tenant = await payrollTenant(ctx, origin, 'bench-soak');
    const requests = await payoutRequests(ctx, tenant, Math.ceil((seconds + warmupMs / 1000) * payoutsPerS));
    await ctx.quiesce();
    const samples = new Map(processes.map((p) => [p.role, [ctx.rssMb(p.child.pid!)]]));
    const sampler = setInterval(() => {
      for (const p of processes) samples.get(p.role)!.push(ctx.rssMb(p.child.pid!));
    }, RSS_SAMPLE_MS);
    const result = await ctx.load({
      origin,
      concurrency: CONCURRENCY,
      warmupMs,
      durationMs: seconds * 1000,
      expectStatus: [201],
      requests,
    });
    clearInterval(sampler);
    const rss: SoakFigures['rss'] = {};
    for (const p of processes) {
      const series = samples.get(p.role)!;
      series.push(ctx.rssMb(p.child.pid!));
      const before = series[Math.min(series.length - 1, Math.round(warmupMs / RSS_SAMPLE_MS))]!;
      const after = series.at(-1)!;
      const half = series[Math.floor((Math.round(warmupMs / RSS_SAMPLE_MS) + series.length - 1) / 2)]!;
      rss[p.role] = {
        mb_samples: series,
        mb_before: before,
        mb_after: after,
        growth: Number(((after - before) / before).toFixed(3)),
        growth_second_half: Number(((after - half) / half).toFixed(3)),
      };
    }
    const figures: SoakFigures = {
      topology: 'api+worker',
      seconds,
      warmup_seconds: warmupMs / 1000,
      throughput_per_s: Math.round(result.throughputPerS),
      p50_ms: Number(result.p50Ms.toFixed(2)),
      p99_ms: Number(result.p99Ms.toFixed(2)),
      errors: result.errors,
      ceiling_throughput_per_s: Math.round(ctx.ceilingPerS),
      ratio: Number((result.throughputPerS / ctx.ceilingPerS).toFixed(2)),
      rss,
    };
    ctx.log(
      `soak (api+worker): ${figures.throughput_per_s}/s for ${seconds} s, errors ${figures.errors}; ` +
        Object.entries(rss)
          .map(([role, r]) => `${role} RSS ${r.mb_samples.join(' ')} MB, growth ${(100 * r.growth).toFixed(1)} %`)
          .join('; '),
    );
    return figures;
  } finally {
    for (const p of processes) await ctx.stop(p.child);
  }
}
