import type { PaymentStatus } from '../../domain/payment-state.ts';
import type { Mode } from '../../domain/partition.ts';
import type { Instrument } from '../../domain/instrument.ts';
import type { Queryable } from '../database.ts';

// The payout report's aggregates (GET /v1/reports/payouts). Every read is a range of one index per
// tenant: payments by (tenant, mode, created_at) (payments_statement), delivery attempts by
// (tenant, mode, created_at) (webhook_deliveries_by_time), and one probe of the balance history per
// account and bucket end. A report across tenants reads each tenant's range in turn (LATERAL), so
// it never scans outside the range asked either. Buckets are given as their start times; rows are
// assigned to them by width_bucket (1-based; the range filter keeps 0 and beyond-the-end out).

/** Who the report covers: one tenant, or every tenant but the platform (`tenantId` null). */
export interface ReportScope {
  tenantId: string | null;
  mode: Mode;
}

export interface ReportWindow {
  start: Date;
  end: Date;
  bucketStarts: readonly Date[];
}

/** [bucket (1-based), status, count, payout amount]. */
type BucketStatusRow = [number, PaymentStatus, number, string];
/** [bucket, payments with an outcome, p50 ms, p95 ms]. */
type BucketTimingRow = [number, number, number, number];
/** [bank code, status, count]. */
type BankStatusRow = [string | null, PaymentStatus, number];
/** [method, status, count]. */
type MethodStatusRow = [Instrument | null, PaymentStatus, number];
/** [status, reason, count, payout amount]. */
type ReasonRow = [PaymentStatus, string | null, number, string];

export interface PaymentAggregates {
  byBucket: BucketStatusRow[];
  timing: BucketTimingRow[];
  banks: BankStatusRow[];
  methods: MethodStatusRow[];
  reasons: ReasonRow[];
}

// The tenants of a scope: one, or every customer tenant (tenants is a small table).
const SCOPE = `scope AS (
  SELECT id AS tenant_id FROM tenants WHERE CASE WHEN $1::uuid IS NULL THEN NOT is_platform ELSE id = $1::uuid END
)`;

// The scope's payments created in the window, each in its bucket: an index range per tenant.
function paymentsInRange(columns: string): string {
  return `SELECT width_bucket(x.created_at, $4::timestamptz[]) AS b, ${columns}
    FROM scope s
    CROSS JOIN LATERAL (
      -- Only columns of payments_report (migration 033): an index-only scan.
      SELECT created_at, status, status_reason, payout_amount, method, bank_code, settled_at, updated_at
        FROM payments
       WHERE tenant_id = s.tenant_id AND mode = $2 AND created_at >= $3 AND created_at < $5
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
async function paymentTallies(db: Queryable, params: unknown[]): Promise<TallyRow[]> {
  const { rows } = await db.query<TallyRow>(
    `WITH ${SCOPE}
     SELECT GROUPING(b, bank_code, method, status_reason)::int AS set, b, status, bank_code, method, status_reason,
            count(*)::int AS n, sum(payout_amount)::text AS amount
       FROM (${paymentsInRange(`x.status, x.bank_code, x.method, x.status_reason, x.payout_amount`)}) p
      GROUP BY GROUPING SETS ((b, status), (bank_code, status), (method, status), (status, status_reason))`,
    params,
    { plan: 'aggregate' },
  );
  return rows;
}

// Time to the outcome: to settled_at for payments that settled (returned and reversed ones too); to
// the last change for failed ones, which a failure is (a failed payment is never written again).
// greatest() skips a null: the CASE outside it keeps a payment without an outcome out.
const OUTCOME_MS = `CASE WHEN x.settled_at IS NOT NULL OR x.status = 'failed'
  THEN greatest(0, floor(extract(epoch FROM coalesce(x.settled_at, x.updated_at) - x.created_at) * 1000))::bigint END`;

/** Per bucket: payments with an outcome, and the p50 and p95 of their time to it (nearest rank). */
async function outcomeTimes(db: Queryable, params: unknown[]): Promise<BucketTimingRow[]> {
  const { rows } = await db.query<{ b: number; n: number; p50: string; p95: string }>(
    `WITH ${SCOPE}
     SELECT b, count(*)::int AS n,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY outcome_ms)::text AS p50,
            percentile_disc(0.95) WITHIN GROUP (ORDER BY outcome_ms)::text AS p95
       FROM (${paymentsInRange(`${OUTCOME_MS} AS outcome_ms`)}) p
      WHERE outcome_ms IS NOT NULL
      GROUP BY b`,
    params,
    { plan: 'aggregate' },
  );
  return rows.map((r) => [r.b, r.n, Number(r.p50), Number(r.p95)]);
}

/** Payments created in the window: counts and amounts by bucket, bank, instrument and reason, and times to outcome. */
export async function paymentAggregates(db: Queryable, scope: ReportScope, window: ReportWindow): Promise<PaymentAggregates> {
  const params = [scope.tenantId, scope.mode, window.start, window.bucketStarts, window.end];
  const [tallies, timing] = await Promise.all([paymentTallies(db, params), outcomeTimes(db, params)]);
  const out: PaymentAggregates = { byBucket: [], timing, banks: [], methods: [], reasons: [] };
  for (const r of tallies) {
    if (r.set === SET_BUCKET) out.byBucket.push([r.b!, r.status, r.n, r.amount]);
    else if (r.set === SET_BANK) out.banks.push([r.bank_code, r.status, r.n]);
    else if (r.set === SET_METHOD) out.methods.push([r.method, r.status, r.n]);
    else if (r.set === SET_REASON && (r.status === 'failed' || r.status === 'returned' || r.status === 'reversed')) out.reasons.push([r.status, r.status_reason, r.n, r.amount]);
  }
  return out;
}

/** [bucket, delivered, rejected, unreachable, p50 ms, p95 ms]. */
export type WebhookBucketRow = [number, number, number, number, number, number];

/** Webhook delivery attempts made in the window, by bucket and outcome, with their durations. */
export async function webhookAggregates(db: Queryable, scope: ReportScope, window: ReportWindow): Promise<WebhookBucketRow[]> {
  const { rows } = await db.query<{ buckets: WebhookBucketRow[] }>(
    `WITH ${SCOPE}
     SELECT coalesce(json_agg(json_build_array(b, delivered, rejected, unreachable, p50, p95)), '[]') AS buckets
       FROM (SELECT width_bucket(d.created_at, $4::timestamptz[]) AS b,
                    count(*) FILTER (WHERE d.ok) AS delivered,
                    count(*) FILTER (WHERE NOT d.ok AND d.status_code IS NOT NULL) AS rejected,
                    count(*) FILTER (WHERE d.status_code IS NULL) AS unreachable,
                    percentile_disc(0.5) WITHIN GROUP (ORDER BY d.duration_ms) AS p50,
                    percentile_disc(0.95) WITHIN GROUP (ORDER BY d.duration_ms) AS p95
               FROM scope s
               CROSS JOIN LATERAL (
                 SELECT created_at, ok, status_code, duration_ms FROM webhook_deliveries
                  WHERE tenant_id = s.tenant_id AND mode = $2 AND created_at >= $3 AND created_at < $5
               ) d
              GROUP BY 1) t`,
    [scope.tenantId, scope.mode, window.start, window.bucketStarts, window.end],
    { plan: 'aggregate' },
  );
  return rows[0]!.buckets;
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
export async function balancesAt(db: Queryable, scope: ReportScope, instants: readonly Date[]): Promise<BalanceAtRow[]> {
  if (instants.length === 0) return [];
  const { rows } = await db.query<{ rows: [number, string, string | null, string | null][] }>(
    `WITH ${SCOPE}, account AS (
       SELECT DISTINCT a.tenant_id, a.asset, a.kind FROM scope s JOIN ledger_accounts a ON a.tenant_id = s.tenant_id
        WHERE a.mode = $2 AND a.kind IN ('prefunding', 'credit_receivable')
     ), started AS (
       SELECT (value #>> '{}')::timestamptz AS at FROM app_state WHERE key = 'balance_history_started_at'
     ), at AS (
       SELECT e.i, a.asset, a.kind,
              -- No row before the instant: zero if the history had started (the account had not moved
              -- yet), unknown otherwise.
              CASE WHEN h.balance IS NOT NULL THEN h.balance WHEN e.instant > (SELECT at FROM started) THEN 0 END AS balance
         FROM unnest($3::timestamptz[]) WITH ORDINALITY AS e(instant, i)
        CROSS JOIN account a
        LEFT JOIN LATERAL (
          SELECT balance FROM ledger_balance_history h
           WHERE h.tenant_id = a.tenant_id AND h.mode = $2 AND h.asset = a.asset AND h.kind = a.kind AND h.at < e.instant
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
    [scope.tenantId, scope.mode, instants],
  );
  return rows[0]!.rows.map(([instant, asset, prefunding, creditReceivable]) => ({ instant, asset, prefunding, creditReceivable }));
}
