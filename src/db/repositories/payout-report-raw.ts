import type { PaymentStatus } from '../../domain/payment-state.ts';
import type { Instrument } from '../../domain/instrument.ts';
import { reportedDurationMs } from '../../domain/report-time-bins.ts';
import type { Queryable } from '../database.ts';
import { isFailureStatus } from '../../domain/payout-report.ts';
import type {
  BucketTimingRow,
  PaymentAggregates,
  ReportScope,
  ReportWindow,
  WebhookBucketRow,
} from './payout-report-rows.ts';
import { outcomeMsOf, scopeOf } from './report-sql.ts';
import { Params } from './sql-params.ts';

// The payout report read from the payments and delivery attempts themselves, before the report
// fold's first run has built the rollups (a new database, or a rebuild under way): every read is a
// range of one index per tenant, payments_report and webhook_deliveries_by_time. Percentiles are
// exact here and given as the report always gives them, by their histogram bin's last millisecond.

/** The placeholders of a read's scope and window. */
interface RangeParams {
  tenant: string;
  mode: string;
  start: string;
  bucketStarts: string;
  end: string;
}

/** A read's scope and window added to its parameters, always in this order (every read's text numbers them alike). */
function rangeParams(p: Params, scope: ReportScope, window: ReportWindow): RangeParams {
  return {
    tenant: p.add(scope.tenantId),
    mode: p.add(scope.mode),
    start: p.add(window.start),
    bucketStarts: p.add(window.bucketStarts),
    end: p.add(window.end),
  };
}

// The scope's payments created in the window, each in its bucket: an index range per tenant.
function paymentsInRange(range: RangeParams, columns: string): string {
  return `SELECT width_bucket(x.created_at, ${range.bucketStarts}::timestamptz[]) AS b, ${columns}
    FROM scope s
    CROSS JOIN LATERAL (
      -- Only columns of payments_report (migration 033): an index-only scan.
      SELECT created_at, status, status_reason, payout_amount, method, bank_code, settled_at, updated_at
        FROM payments
       WHERE tenant_id = s.tenant_id AND mode = ${range.mode} AND created_at >= ${range.start} AND created_at < ${range.end}
    ) x`;
}

// GROUPING() of (b, bank_code, method, status_reason): a bit is set for each column a set leaves out.
const SET_BUCKET = 0b0111;
const SET_BANK = 0b1011;
const SET_METHOD = 0b1101;
const SET_REASON = 0b1110;

interface TallyRow {
  set: number;
  b: number | null;
  status: PaymentStatus;
  bank_code: string | null;
  method: Instrument | null;
  status_reason: string | null;
  n: number;
  amount: string;
}

/**
 * Counts and amounts by bucket, bank, instrument and reason: one scan of the range, one hash
 * aggregate of four grouping sets (a few hundred rows out, whatever the range holds).
 */
async function paymentTallies(db: Queryable, scope: ReportScope, window: ReportWindow): Promise<TallyRow[]> {
  const p = new Params();
  const range = rangeParams(p, scope, window);
  const { rows } = await db.query<TallyRow>(
    `WITH ${scopeOf(range.tenant)}
     SELECT GROUPING(b, bank_code, method, status_reason)::int AS set, b, status, bank_code, method, status_reason,
            count(*)::int AS n, sum(payout_amount)::text AS amount
       FROM (${paymentsInRange(range, `x.status, x.bank_code, x.method, x.status_reason, x.payout_amount`)}) p
      GROUP BY GROUPING SETS ((b, status), (bank_code, status), (method, status), (status, status_reason))`,
    p.values,
    { plan: 'aggregate' },
  );
  return rows;
}

/** Per bucket: payments with an outcome, and the p50 and p95 of their time to it (nearest rank). */
async function outcomeTimes(db: Queryable, scope: ReportScope, window: ReportWindow): Promise<BucketTimingRow[]> {
  const p = new Params();
  const range = rangeParams(p, scope, window);
  const { rows } = await db.query<{ b: number; n: number; p50: string; p95: string }>(
    `WITH ${scopeOf(range.tenant)}
     SELECT b, count(*)::int AS n,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY outcome_ms)::text AS p50,
            percentile_disc(0.95) WITHIN GROUP (ORDER BY outcome_ms)::text AS p95
       FROM (${paymentsInRange(range, `${outcomeMsOf('x')} AS outcome_ms`)}) p
      WHERE outcome_ms IS NOT NULL
      GROUP BY b`,
    p.values,
    { plan: 'aggregate' },
  );
  return rows.map((r) => [r.b, r.n, reportedDurationMs(Number(r.p50)), reportedDurationMs(Number(r.p95))]);
}

/** Payments created in the window, read from the payments themselves. */
export async function rawPaymentAggregates(
  db: Queryable,
  scope: ReportScope,
  window: ReportWindow,
): Promise<PaymentAggregates> {
  const [tallies, timing] = await Promise.all([paymentTallies(db, scope, window), outcomeTimes(db, scope, window)]);
  const out: PaymentAggregates = { byBucket: [], timing, banks: [], methods: [], reasons: [] };
  for (const r of tallies) {
    if (r.set === SET_BUCKET) out.byBucket.push([r.b!, r.status, r.n, r.amount]);
    else if (r.set === SET_BANK) out.banks.push([r.bank_code, r.status, r.n]);
    else if (r.set === SET_METHOD) out.methods.push([r.method, r.status, r.n]);
    else if (r.set === SET_REASON && isFailureStatus(r.status))
      out.reasons.push([r.status, r.status_reason, r.n, r.amount]);
  }
  return out;
}

/** Webhook delivery attempts made in the window, read from the attempts themselves. */
export async function rawWebhookAggregates(
  db: Queryable,
  scope: ReportScope,
  window: ReportWindow,
): Promise<WebhookBucketRow[]> {
  const p = new Params();
  const range = rangeParams(p, scope, window);
  const { rows } = await db.query<{ buckets: WebhookBucketRow[] }>(
    `WITH ${scopeOf(range.tenant)}
     SELECT coalesce(json_agg(json_build_array(b, delivered, rejected, unreachable, p50, p95)), '[]') AS buckets
       FROM (SELECT width_bucket(d.created_at, ${range.bucketStarts}::timestamptz[]) AS b,
                    count(*) FILTER (WHERE d.ok) AS delivered,
                    count(*) FILTER (WHERE NOT d.ok AND d.status_code IS NOT NULL) AS rejected,
                    count(*) FILTER (WHERE d.status_code IS NULL) AS unreachable,
                    percentile_disc(0.5) WITHIN GROUP (ORDER BY d.duration_ms) AS p50,
                    percentile_disc(0.95) WITHIN GROUP (ORDER BY d.duration_ms) AS p95
               FROM scope s
               CROSS JOIN LATERAL (
                 SELECT created_at, ok, status_code, duration_ms FROM webhook_deliveries
                  WHERE tenant_id = s.tenant_id AND mode = ${range.mode} AND created_at >= ${range.start} AND created_at < ${range.end}
               ) d
              GROUP BY 1) t`,
    p.values,
    { plan: 'aggregate' },
  );
  return rows[0]!.buckets.map(([b, delivered, rejected, unreachable, p50, p95]) => [
    b,
    delivered,
    rejected,
    unreachable,
    reportedDurationMs(p50),
    reportedDurationMs(p95),
  ]);
}
