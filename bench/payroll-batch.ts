// The payroll-batch scenario: the payroll of `payroll` (bench/end-to-end.ts: same topologies, rail,
// receiver and clock), submitted as a payroll file is: batches of items through
// `POST /v1/payout-batches`, each item quoted at submission (`deliver`, so no quote is made
// beforehand), a few batches at once as independent closed loops.
import type { LoadJob, LoadResult } from './load.ts';
import {
  describeCpu,
  runEndToEnd,
  type EndToEndFigures,
  type PayrollContext,
  type PayrollTenant,
  type Topology,
} from './end-to-end.ts';

/** What each item delivers, BS minor units (5,000.00 Bs: under pago móvil's per-payout cap). */
const ITEM_AMOUNT = 500_000;

/** What a batched payroll should reach, against ceiling (b) c64 of the same run. */
const TARGETS = { submit_ratio_min: 2, end_to_end_ratio_min: 1, batch_p99_ms_max: 2000, errors_max: 0 } as const;

export interface BatchShape {
  payouts: number;
  itemsPerBatch: number;
  /** Batches in flight at once (the service records PAYOUT_BATCHES_IN_PROGRESS_MAX, 4, per tenant at once). */
  concurrency: number;
}

export interface PayrollBatchFigures extends EndToEndFigures {
  batches: number;
  items_per_batch: number;
  concurrency: number;
  /** Payouts per second from the first batch request to the last batch answer. */
  submit_throughput_per_s: number;
  batch_p50_ms: number;
  batch_p99_ms: number;
  /** Answers other than 201, plus items of 201 answers that are not `submitted`. */
  errors: number;
  statuses: Record<string, number>;
  item_statuses: Record<string, number>;
  submit_ratio: number;
  targets: typeof TARGETS;
  targets_met: { submit_ratio: boolean; end_to_end_ratio: boolean; batch_p99_ms: boolean; errors: boolean };
}

/** The payroll as batch requests: `itemsPerBatch` items each (the last may hold fewer), one key each. */
export function batchRequests(ctx: PayrollContext, tenant: PayrollTenant, shape: BatchShape): LoadJob['requests'] {
  const headers = { 'x-api-key': tenant.key, 'content-type': 'application/json' };
  const requests: LoadJob['requests'] = [];
  for (let first = 0; first < shape.payouts; first += shape.itemsPerBatch) {
    const items = Array.from({ length: Math.min(shape.itemsPerBatch, shape.payouts - first) }, (_, i) => ({
      reference: `emp-${first + i}`,
      deliver: { asset: 'BS', amount: ITEM_AMOUNT },
      method: 'pago_movil',
      beneficiaryId: tenant.beneficiaryId,
      sender: ctx.sender,
    }));
    const key = `${tenant.name}-${first / shape.itemsPerBatch}`;
    requests.push({
      method: 'POST',
      path: '/v1/payout-batches',
      headers: { ...headers, 'idempotency-key': key },
      body: JSON.stringify({ items }),
    });
  }
  return requests;
}

export async function runPayrollBatch(
  ctx: PayrollContext,
  topology: Topology,
  shape: BatchShape,
): Promise<PayrollBatchFigures> {
  const batches = Math.ceil(shape.payouts / shape.itemsPerBatch);
  const { submitted, figures } = await runEndToEnd(ctx, topology, {
    name: 'payroll-batch',
    payouts: shape.payouts,
    prepare: async (tenant) => batchRequests(ctx, tenant, shape),
    submit: async (origin, requests): Promise<LoadResult> => {
      const result = await ctx.load({
        origin,
        concurrency: shape.concurrency,
        warmupMs: 0,
        durationMs: 0,
        drain: true,
        expectStatus: [201],
        expectItemStatus: 'submitted',
        requests,
      });
      ctx.log(
        `payroll-batch (${topology}): ${batches} batches answered at ${(result.throughputPerS * (shape.payouts / batches)).toFixed(0)} payouts/s, ` +
          `p99 ${result.p99Ms.toFixed(0)} ms, answers ${JSON.stringify(result.statuses)}, items ${JSON.stringify(result.itemStatuses)}`,
      );
      for (const text of result.errorSamples) ctx.log(`payroll-batch (${topology}): unexpected: ${text}`);
      return result;
    },
  });
  const submitPerS = (submitted.throughputPerS * shape.payouts) / batches;
  const measured = {
    submit_ratio: submitPerS / ctx.ceilingPerS,
    batch_p99_ms: submitted.p99Ms,
    errors: submitted.errors + submitted.itemErrors,
  };
  return {
    ...figures,
    batches,
    items_per_batch: shape.itemsPerBatch,
    concurrency: shape.concurrency,
    submit_throughput_per_s: Math.round(submitPerS),
    batch_p50_ms: Number(submitted.p50Ms.toFixed(2)),
    batch_p99_ms: Number(submitted.p99Ms.toFixed(2)),
    errors: measured.errors,
    statuses: submitted.statuses,
    item_statuses: submitted.itemStatuses,
    submit_ratio: Number(measured.submit_ratio.toFixed(2)),
    targets: TARGETS,
    targets_met: {
      submit_ratio: measured.submit_ratio >= TARGETS.submit_ratio_min,
      end_to_end_ratio: figures.end_to_end_ratio >= TARGETS.end_to_end_ratio_min,
      batch_p99_ms: measured.batch_p99_ms <= TARGETS.batch_p99_ms_max,
      errors: measured.errors <= TARGETS.errors_max,
    },
  };
}

/** The summary's lines of one batched payroll: its figures, then each target met or not. */
export function describePayrollBatch(p: PayrollBatchFigures): string {
  const met = (ok: boolean) => (ok ? 'met' : 'NOT MET');
  return (
    `payroll-batch (${p.topology}, ${p.payouts} payouts in ${p.batches} batches of ${p.items_per_batch}, c${p.concurrency}): ` +
    `submit ${p.submit_throughput_per_s}/s (ratio ${p.submit_ratio}, batch p50 ${p.batch_p50_ms} ms, p99 ${p.batch_p99_ms} ms, errors ${p.errors}); ` +
    `all settled ${p.seconds_to_all_settled} s; last webhook ${p.seconds_to_last_webhook} s → ${p.end_to_end_per_s}/s end to end (ratio ${p.end_to_end_ratio}); ` +
    `CPU per payout: ${describeCpu(p)}; RSS after ${Object.entries(p.rss_mb_after)
      .map(([role, mb]) => `${role} ${mb} MB`)
      .join(', ')}\n` +
    `  targets: submit ≥ ${p.targets.submit_ratio_min}× ceiling (b) ${met(p.targets_met.submit_ratio)}, ` +
    `end to end ≥ ${p.targets.end_to_end_ratio_min.toFixed(1)}× ${met(p.targets_met.end_to_end_ratio)}, ` +
    `batch p99 ≤ ${p.targets.batch_p99_ms_max} ms ${met(p.targets_met.batch_p99_ms)}, ` +
    `${p.targets.errors_max} errors ${met(p.targets_met.errors)}`
  );
}
