// The noisy-neighbour scenario (`noisy-neighbour`): what one tenant's payroll file costs another
// tenant. The service runs every role (ROLE=all). A second tenant sends single payouts at concurrency 8
// (pre-made quotes, one beneficiary, the sender inline) for a fixed window alone, then for the same
// window while the first tenant submits its 10,000-item payroll as batches of 1,000 (2 in flight,
// each item quoted at submission) and the reaper sends and settles them in the same process. The
// requirement: the neighbour's p99 with the payroll within 2 × its p99 alone.
import type { LoadResult } from './load.ts';
import { payrollTenant, startTopology, type PayrollContext } from './end-to-end.ts';
import { batchRequests } from './payroll-batch.ts';
import { payoutRequests } from './payroll.ts';

export const NOISY_P99_RATIO_TARGET = 2;
const NEIGHBOUR_CONCURRENCY = 8;
/** Quotes seeded per second of each window: more than the neighbour can use. */
const NEIGHBOUR_PAYOUTS_PER_S = 1000;

export interface NoisyNeighbourOptions {
  payouts: number;
  itemsPerBatch: number;
  batchConcurrency: number;
  windowMs: number;
}

export interface NoisyNeighbourFigures {
  window_s: number;
  alone: { throughput_per_s: number; p50_ms: number; p99_ms: number; errors: number };
  with_payroll: { throughput_per_s: number; p50_ms: number; p99_ms: number; errors: number };
  payroll: { payouts: number; batches_p99_ms: number; batch_errors: number };
  p99_ratio: number;
  target: number;
  target_met: boolean;
}

const figuresOf = (r: LoadResult) => ({
  throughput_per_s: Math.round(r.throughputPerS),
  p50_ms: Number(r.p50Ms.toFixed(2)),
  p99_ms: Number(r.p99Ms.toFixed(2)),
  errors: r.errors,
});

export async function runNoisyNeighbour(
  ctx: PayrollContext,
  options: NoisyNeighbourOptions,
): Promise<NoisyNeighbourFigures> {
  const { origin, processes } = await startTopology(ctx, 'all');
  try {
    const payroll = await payrollTenant(ctx, origin, 'bench-noisy-payroll');
    const neighbour = await payrollTenant(ctx, origin, 'bench-noisy-neighbour');
    const perWindow = Math.ceil((options.windowMs / 1000) * NEIGHBOUR_PAYOUTS_PER_S);
    const aloneRequests = await payoutRequests(ctx, neighbour, perWindow, 'noisy-alone');
    const noisyRequests = await payoutRequests(ctx, neighbour, perWindow, 'noisy-with');
    const batches = batchRequests(ctx, payroll, {
      payouts: options.payouts,
      itemsPerBatch: options.itemsPerBatch,
      concurrency: options.batchConcurrency,
    });
    await ctx.quiesce();
    const job = {
      origin,
      concurrency: NEIGHBOUR_CONCURRENCY,
      warmupMs: 0,
      durationMs: options.windowMs,
      expectStatus: [201],
    };
    const alone = await ctx.load({ ...job, requests: aloneRequests });
    const [withPayroll, submitted] = await Promise.all([
      ctx.load({ ...job, requests: noisyRequests }),
      ctx.load({
        origin,
        concurrency: options.batchConcurrency,
        warmupMs: 0,
        durationMs: 0,
        drain: true,
        expectStatus: [201],
        expectItemStatus: 'submitted',
        requests: batches,
      }),
    ]);
    const ratio = withPayroll.p99Ms / alone.p99Ms;
    const figures: NoisyNeighbourFigures = {
      window_s: options.windowMs / 1000,
      alone: figuresOf(alone),
      with_payroll: figuresOf(withPayroll),
      payroll: {
        payouts: options.payouts,
        batches_p99_ms: Number(submitted.p99Ms.toFixed(0)),
        batch_errors: submitted.errors + submitted.itemErrors,
      },
      p99_ratio: Number(ratio.toFixed(2)),
      target: NOISY_P99_RATIO_TARGET,
      target_met: ratio <= NOISY_P99_RATIO_TARGET,
    };
    ctx.log(`noisy-neighbour: ${describeNoisyNeighbour(figures).trim()}`);
    return figures;
  } finally {
    for (const p of processes) await ctx.stop(p.child);
  }
}

export function describeNoisyNeighbour(f: NoisyNeighbourFigures): string {
  return (
    `noisy neighbour (c${NEIGHBOUR_CONCURRENCY} single payouts, ${f.window_s} s windows): alone ${f.alone.throughput_per_s}/s p99 ${f.alone.p99_ms} ms; ` +
    `beside a ${f.payroll.payouts}-item payroll file ${f.with_payroll.throughput_per_s}/s p99 ${f.with_payroll.p99_ms} ms → ${f.p99_ratio} × ` +
    `(≤ ${f.target} ×: ${f.target_met ? 'met' : 'NOT met'}); the payroll's batch p99 ${f.payroll.batches_p99_ms} ms, errors ${f.payroll.batch_errors}\n`
  );
}
