import type { PaymentStatus } from '../../domain/payment-state.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type {
  BucketTimingRow,
  PaymentAggregates,
  ReportScope,
  ReportWindow,
  WebhookBucketRow,
} from './payout-report-rows.ts';
import { addBins, histogramPercentiles, TIME_BIN_STARTS, type TimeHistogram } from '../../domain/report-time-bins.ts';
import type { Queryable } from '../database.ts';
import { rawPaymentAggregates, rawWebhookAggregates } from './payout-report-raw.ts';
import {
  binOf,
  FOLD_CTE,
  REASONED_STATUSES,
  scopeOf,
  unfoldedDeliveries,
  unfoldedPaymentChanges,
} from './report-sql.ts';
import { rollupsBuilt } from './report-rollups.ts';
import { Params } from './sql-params.ts';

// The payout report's aggregates (GET /v1/reports/payouts): the rollups the report fold keeps
// (report-rollups.ts), plus the changes committed since its last run, read in the same statement as
// the rollups so the two agree (the fold records the snapshot it folded up to with them). Every
// read is a range of one index per tenant: rollup rows by (tenant, mode, period, bucket start), and
// one probe of the balance history per account and bucket end; the changes since the last fold are
// one range of the history's txid index. A report across tenants reads each tenant's range in turn
// (LATERAL), never a scan across tenants. Buckets are given as their start times; rows are assigned
// to them by width_bucket (1-based; the range filter keeps 0 and beyond-the-end out).

/** The placeholders of a report's scope (its tenant, or null for every customer tenant, and mode) and window. */
interface WindowParams {
  tenant: string;
  mode: string;
  start: string;
  bucketStarts: string;
  end: string;
  granularity: string;
}

/** A report statement's scope and window added to its parameters, in one order for every statement. */
const windowParams = (p: Params, scope: ReportScope, window: ReportWindow): WindowParams => ({
  tenant: p.add(scope.tenantId),
  mode: p.add(scope.mode),
  start: p.add(window.start),
  bucketStarts: p.add(window.bucketStarts),
  end: p.add(window.end),
  granularity: p.add(window.granularity),
});

const inWindow = (t: string, w: WindowParams) =>
  `${t}.tenant_id IN (SELECT tenant_id FROM scope) AND ${t}.mode = ${w.mode} AND ${t}.created_at >= ${w.start} AND ${t}.created_at < ${w.end}`;
// The rollup rows of one table in the window, per tenant of the scope: one index range each.
const rollupRows = (
  table: string,
  columns: string,
  period: string,
  w: WindowParams,
  where = 'true',
) => `SELECT r.* FROM scope s CROSS JOIN LATERAL (
    SELECT ${columns} FROM ${table}
     WHERE tenant_id = s.tenant_id AND mode = ${w.mode} AND period = ${period} AND bucket_start >= ${w.start} AND bucket_start < ${w.end} AND ${where}
  ) r`;

interface CountRow {
  b: number;
  dimension: 'status' | 'bank' | 'method' | 'reason';
  key: string | null;
  status: PaymentStatus;
  n: number;
  amount: string;
}

// Counts per bucket come from the granularity's rows; counts over the range (bank, instrument,
// reason) from day rows, whatever the granularity, since a range is whole days.
function countsSql(params: Params, scope: ReportScope, window: ReportWindow): string {
  const w = windowParams(params, scope, window);
  return `WITH ${scopeOf(w.tenant)}, ${FOLD_CTE},
change AS (${unfoldedPaymentChanges(inWindow('p', w))}),
counted AS (
  SELECT CASE WHEN dimension = 'status' THEN width_bucket(bucket_start, ${w.bucketStarts}::timestamptz[]) ELSE 0 END AS b, dimension, key, status, payments, amount
    FROM (${rollupRows('report_payment_counts', 'bucket_start, dimension, key, status, payments, amount', w.granularity, w)}) r
  UNION ALL
  SELECT 0, dimension, key, status, payments, amount
    FROM (${rollupRows('report_payment_counts', 'dimension, key, status, payments, amount', "'day'", w, `${w.granularity} = 'hour' AND dimension <> 'status'`)}) r
  UNION ALL
  SELECT CASE WHEN k.dimension = 'status' THEN width_bucket(c.created_at, ${w.bucketStarts}::timestamptz[]) ELSE 0 END, k.dimension, k.key, c.status, c.sign, c.sign * c.payout_amount
    FROM change c
   CROSS JOIN LATERAL (VALUES ('status', NULL::text), ('bank', c.bank_code), ('method', c.method), ('reason', c.reason)) k(dimension, key)
   WHERE k.dimension <> 'reason' OR c.status IN ${REASONED_STATUSES}
)
SELECT b, dimension, key, status, sum(payments)::int AS n, sum(amount)::text AS amount
  FROM counted GROUP BY b, dimension, key, status HAVING sum(payments) <> 0`;
}

// Time histograms per bucket: the rollups' documents of the window, and the changes not folded yet
// gathered into one document per bucket. Their sum per bucket gives the percentiles (addBins).
function timingSql(params: Params, scope: ReportScope, window: ReportWindow): string {
  const w = windowParams(params, scope, window);
  return `WITH ${scopeOf(w.tenant)}, ${FOLD_CTE},
change AS (${unfoldedPaymentChanges(inWindow('p', w))})
SELECT width_bucket(bucket_start, ${w.bucketStarts}::timestamptz[]) AS b, bins
  FROM (${rollupRows('report_outcome_times', 'bucket_start, bins', w.granularity, w)}) r
UNION ALL
SELECT b, jsonb_object_agg(lo_ms, n)
  FROM (SELECT width_bucket(created_at, ${w.bucketStarts}::timestamptz[]) AS b, ${binOf('outcome_ms', params.add(TIME_BIN_STARTS))} AS lo_ms, count(*) AS n
          FROM change WHERE outcome_ms IS NOT NULL GROUP BY 1, 2) x
 GROUP BY b`;
}

/** Per bucket: the histograms' sum, as [bucket, count, p50, p95]. */
function timingOf(rows: readonly { b: number; bins: Record<string, number> }[]): BucketTimingRow[] {
  const byBucket = new Map<number, TimeHistogram>();
  for (const r of rows) {
    const histogram = byBucket.get(r.b) ?? new Map<number, number>();
    addBins(histogram, r.bins);
    byBucket.set(r.b, histogram);
  }
  return [...byBucket].flatMap(([b, histogram]) => {
    const { count, p50Ms, p95Ms } = histogramPercentiles(histogram);
    return count === 0 ? [] : [[b, count, p50Ms!, p95Ms!] as BucketTimingRow];
  });
}

async function rollupPaymentAggregates(
  db: Queryable,
  scope: ReportScope,
  window: ReportWindow,
): Promise<PaymentAggregates> {
  const [countsParams, timingParams] = [new Params(), new Params()];
  const [counts, timing] = await Promise.all([
    db.query<CountRow>(countsSql(countsParams, scope, window), countsParams.values, { plan: 'aggregate' }),
    db.query<{ b: number; bins: Record<string, number> }>(timingSql(timingParams, scope, window), timingParams.values, {
      plan: 'aggregate',
    }),
  ]);
  const out: PaymentAggregates = { byBucket: [], timing: [], banks: [], methods: [], reasons: [] };
  for (const r of counts.rows) {
    if (r.dimension === 'status') out.byBucket.push([r.b, r.status, r.n, r.amount]);
    else if (r.dimension === 'bank') out.banks.push([r.key, r.status, r.n]);
    else if (r.dimension === 'method') out.methods.push([r.key as Instrument | null, r.status, r.n]);
    else out.reasons.push([r.status, r.key, r.n, r.amount]);
  }
  out.timing = timingOf(timing.rows);
  return out;
}

// Attempts per bucket by outcome, with their durations' histogram: the rollups' rows of the window,
// and the attempts not folded yet gathered into one row per bucket.
function webhooksSql(params: Params, scope: ReportScope, window: ReportWindow): string {
  const w = windowParams(params, scope, window);
  return `WITH ${scopeOf(w.tenant)}, ${FOLD_CTE}
SELECT width_bucket(bucket_start, ${w.bucketStarts}::timestamptz[]) AS b, delivered::int, rejected::int, unreachable::int, bins
  FROM (${rollupRows('report_webhook_attempts', 'bucket_start, delivered, rejected, unreachable, bins', w.granularity, w)}) r
UNION ALL
SELECT b, sum(delivered)::int, sum(rejected)::int, sum(unreachable)::int, jsonb_object_agg(lo_ms, n)
  FROM (SELECT width_bucket(created_at, ${w.bucketStarts}::timestamptz[]) AS b, ${binOf('duration_ms', params.add(TIME_BIN_STARTS))} AS lo_ms, count(*) AS n,
               count(*) FILTER (WHERE outcome = 'delivered') AS delivered, count(*) FILTER (WHERE outcome = 'rejected') AS rejected,
               count(*) FILTER (WHERE outcome = 'unreachable') AS unreachable
          FROM (${unfoldedDeliveries(inWindow('d', w))}) d GROUP BY 1, 2) x
 GROUP BY b`;
}

interface AttemptRow {
  b: number;
  delivered: number;
  rejected: number;
  unreachable: number;
  bins: Record<string, number>;
}

async function rollupWebhookAggregates(
  db: Queryable,
  scope: ReportScope,
  window: ReportWindow,
): Promise<WebhookBucketRow[]> {
  const p = new Params();
  const { rows } = await db.query<AttemptRow>(webhooksSql(p, scope, window), p.values, { plan: 'aggregate' });
  const byBucket = new Map<
    number,
    { delivered: number; rejected: number; unreachable: number; histogram: TimeHistogram }
  >();
  for (const r of rows) {
    const bucket = byBucket.get(r.b) ?? {
      delivered: 0,
      rejected: 0,
      unreachable: 0,
      histogram: new Map<number, number>(),
    };
    bucket.delivered += r.delivered;
    bucket.rejected += r.rejected;
    bucket.unreachable += r.unreachable;
    addBins(bucket.histogram, r.bins);
    byBucket.set(r.b, bucket);
  }
  return [...byBucket].flatMap(([b, x]) => {
    const { count, p50Ms, p95Ms } = histogramPercentiles(x.histogram);
    return count === 0 ? [] : [[b, x.delivered, x.rejected, x.unreachable, p50Ms!, p95Ms!] as WebhookBucketRow];
  });
}

/**
 * Payments created in the window (counts and amounts by bucket, bank, instrument and reason, and
 * times to outcome) and webhook attempts made in it: from the rollups once built, else from the
 * payments and attempts themselves. One probe decides for both.
 */
export async function reportAggregates(
  db: Queryable,
  scope: ReportScope,
  window: ReportWindow,
): Promise<{ payments: PaymentAggregates; webhooks: WebhookBucketRow[] }> {
  const built = await rollupsBuilt(db);
  const [payments, webhooks] = await Promise.all(
    built
      ? [rollupPaymentAggregates(db, scope, window), rollupWebhookAggregates(db, scope, window)]
      : [rawPaymentAggregates(db, scope, window), rawWebhookAggregates(db, scope, window)],
  );
  return { payments, webhooks };
}

/** One asset's balances at one instant: sums over the scope's tenants; null where none was recorded. */
export interface BalanceAtRow {
  /** Index into the instants asked (0-based). */
  instant: number;
  asset: string;
  /** The prefunding account's balance (credit-normal: ≤ 0) and the credit drawn (≥ 0). */
  prefunding: string | null;
  creditReceivable: string | null;
}

/**
 * The prefunding and credit balances of every asset the scope holds, as they were just before each
 * instant: the last history row of each account before it (one index probe each).
 */
export async function balancesAt(
  db: Queryable,
  scope: ReportScope,
  instants: readonly Date[],
): Promise<BalanceAtRow[]> {
  if (instants.length === 0) return [];
  const p = new Params();
  const [tenant, mode] = [p.add(scope.tenantId), p.add(scope.mode)];
  const { rows } = await db.query<{ rows: [number, string, string | null, string | null][] }>(
    `WITH ${scopeOf(tenant)}, account AS (
       SELECT DISTINCT a.tenant_id, a.asset, a.kind FROM scope s JOIN ledger_accounts a ON a.tenant_id = s.tenant_id
        WHERE a.mode = ${mode} AND a.kind IN ('prefunding', 'credit_receivable')
     ), started AS (
       SELECT (value #>> '{}')::timestamptz AS at FROM app_state WHERE key = 'balance_history_started_at'
     ), at AS (
       SELECT e.i, a.asset, a.kind,
              -- No row before the instant: zero if the history had started (the account had not moved
              -- yet), unknown otherwise.
              CASE WHEN h.balance IS NOT NULL THEN h.balance WHEN e.instant > (SELECT at FROM started) THEN 0 END AS balance
         FROM unnest(${p.add(instants)}::timestamptz[]) WITH ORDINALITY AS e(instant, i)
        CROSS JOIN account a
        LEFT JOIN LATERAL (
          SELECT balance FROM ledger_balance_history h
           WHERE h.tenant_id = a.tenant_id AND h.mode = ${mode} AND h.asset = a.asset AND h.kind = a.kind AND h.at < e.instant
           ORDER BY h.at DESC, h.id DESC LIMIT 1
        ) h ON true
     )
     SELECT coalesce(json_agg(json_build_array(i - 1, asset, prefunding, credit) ORDER BY i, asset), '[]') AS rows
       FROM (SELECT i, asset,
                    -- An account the scope does not have is zero; one it has with no row yet is unknown.
                    CASE WHEN count(*) FILTER (WHERE kind = 'prefunding') = 0 THEN '0'
                         ELSE (sum(balance) FILTER (WHERE kind = 'prefunding'))::text END AS prefunding,
                    CASE WHEN count(*) FILTER (WHERE kind = 'credit_receivable') = 0 THEN '0'
                         ELSE (sum(balance) FILTER (WHERE kind = 'credit_receivable'))::text END AS credit
               FROM at GROUP BY i, asset) t`,
    p.values,
  );
  return rows[0]!.rows.map(([instant, asset, prefunding, creditReceivable]) => ({
    instant,
    asset,
    prefunding,
    creditReceivable,
  }));
}
