import { TIME_BIN_STARTS } from '../../domain/report-time-bins.ts';
import type { Database, Queryable, TransactionHandle } from '../database.ts';
import {
  ALL_DELIVERIES,
  ALL_PAYMENTS,
  binOf,
  countKeysOf,
  FOLD_CTE,
  ROLLUPS_BUILT_SQL,
  timeKeysOf,
  unfoldedDeliveries,
  unfoldedPaymentChanges,
} from './report-sql.ts';
import { Params } from './sql-params.ts';

// The report fold: adds the payment changes and webhook delivery attempts committed since its last
// run to the report's rollups (migration 034), and records the snapshot it folded up to, all in one
// statement. Locks (db/commit/README.md): the one report_fold row, SKIP LOCKED, so a second process's
// fold skips its turn instead of waiting; then the rollup rows, which nothing else writes. The
// statement reads a snapshot taken after that lock is held, so it always starts from where the
// previous fold committed.

export interface FoldResult {
  /** False when another process's fold held the lock: nothing was done. */
  ran: boolean;
  /** True when this run built the rollups from the payments themselves (their first run). */
  built: boolean;
  paymentChanges: number;
  deliveries: number;
}

// Signed payment rows (`payment_change`) and delivery attempts (`delivery`) into the rollups. `bins`:
// the placeholder of the time bins' starts (binOf). A histogram document gains the counts of its bins.
const mergedBins = (a: string, b: string) => `(SELECT jsonb_object_agg(key, n) FROM (
      SELECT key, sum(value::bigint) AS n FROM (SELECT * FROM jsonb_each_text(${a}) UNION ALL SELECT * FROM jsonb_each_text(${b})) e GROUP BY key
    ) t)`;
const intoRollups = (bins: string): string => `counts AS (
  INSERT INTO report_payment_counts AS r (tenant_id, mode, period, bucket_start, dimension, key, status, payments, amount)
  SELECT c.tenant_id, c.mode, k.period, k.bucket_start, k.dimension, k.key, c.status, sum(c.sign), sum(c.sign * c.payout_amount)
    FROM payment_change c ${countKeysOf('c')}
   GROUP BY 1, 2, 3, 4, 5, 6, 7
  ON CONFLICT ON CONSTRAINT report_payment_counts_key
  DO UPDATE SET payments = r.payments + excluded.payments, amount = r.amount + excluded.amount
), times AS (
  INSERT INTO report_outcome_times AS r (tenant_id, mode, period, bucket_start, bins)
  SELECT tenant_id, mode, period, bucket_start, jsonb_object_agg(lo_ms, n)
    FROM (SELECT c.tenant_id, c.mode, k.period, k.bucket_start, ${binOf('c.outcome_ms', bins)} AS lo_ms, count(*) AS n
            FROM payment_change c ${timeKeysOf('c')}
           WHERE c.outcome_ms IS NOT NULL
           GROUP BY 1, 2, 3, 4, 5) x
   GROUP BY 1, 2, 3, 4
  ON CONFLICT (tenant_id, mode, period, bucket_start) DO UPDATE SET bins = ${mergedBins('r.bins', 'excluded.bins')}
), attempts AS (
  INSERT INTO report_webhook_attempts AS r (tenant_id, mode, period, bucket_start, delivered, rejected, unreachable, bins)
  SELECT tenant_id, mode, period, bucket_start, sum(delivered), sum(rejected), sum(unreachable), jsonb_object_agg(lo_ms, n)
    FROM (SELECT d.tenant_id, d.mode, k.period, k.bucket_start, ${binOf('d.duration_ms', bins)} AS lo_ms, count(*) AS n,
                 count(*) FILTER (WHERE d.outcome = 'delivered') AS delivered, count(*) FILTER (WHERE d.outcome = 'rejected') AS rejected,
                 count(*) FILTER (WHERE d.outcome = 'unreachable') AS unreachable
            FROM delivery d ${timeKeysOf('d')}
           GROUP BY 1, 2, 3, 4, 5) x
   GROUP BY 1, 2, 3, 4
  ON CONFLICT (tenant_id, mode, period, bucket_start) DO UPDATE SET
    delivered = r.delivered + excluded.delivered, rejected = r.rejected + excluded.rejected,
    unreachable = r.unreachable + excluded.unreachable, bins = ${mergedBins('r.bins', 'excluded.bins')}
)`;

const foldSql = (bins: string, payments: string, deliveries: string): string => `WITH ${FOLD_CTE},
payment_change AS (${payments}),
delivery AS (${deliveries}),
${intoRollups(bins)}
UPDATE report_fold SET folded = pg_current_snapshot(), folded_at = now()
RETURNING (SELECT count(*) FROM payment_change)::int AS changes, (SELECT count(*) FROM delivery)::int AS deliveries`;

/**
 * The longest a first build may run: it reads every payment and webhook attempt once (about a
 * minute for millions of rows), so the service's per-statement bound would stop it on a large
 * database. A fold of what changed since the last one keeps that bound.
 */
const BUILD_STATEMENT_TIMEOUT_MS = 30 * 60_000;

async function foldOnce(tx: TransactionHandle): Promise<FoldResult> {
  const { rows: lock } = await tx.query<{ unbuilt: boolean }>(
    'SELECT folded IS NULL AS unbuilt FROM report_fold FOR UPDATE SKIP LOCKED',
  );
  if (lock.length === 0) return { ran: false, built: false, paymentChanges: 0, deliveries: 0 };
  const built = lock[0]!.unbuilt;
  // A first build starts from empty rollups (an operator rebuilds by setting `folded` to null).
  if (built) {
    await tx.exec(
      `SET LOCAL statement_timeout = ${BUILD_STATEMENT_TIMEOUT_MS}; DELETE FROM report_payment_counts; DELETE FROM report_outcome_times; DELETE FROM report_webhook_attempts`,
    );
  }
  const p = new Params();
  const bins = p.add(TIME_BIN_STARTS);
  const sql = built
    ? foldSql(bins, ALL_PAYMENTS, ALL_DELIVERIES)
    : foldSql(bins, unfoldedPaymentChanges(), unfoldedDeliveries());
  const { rows } = await tx.query<{ changes: number; deliveries: number }>(sql, p.values);
  return { ran: true, built, paymentChanges: rows[0]!.changes, deliveries: rows[0]!.deliveries };
}

/** Whether the report fold has built the rollups (until its first run, reports read the payments themselves). */
export async function rollupsBuilt(db: Pick<Queryable, 'query'>): Promise<boolean> {
  const { rows } = await db.query<{ built: boolean }>(ROLLUPS_BUILT_SQL);
  return rows[0]?.built === true;
}

/** One fold: the first builds the rollups from the payments and attempts themselves, later ones add what changed since. */
export function foldReportRollups(db: Database): Promise<FoldResult> {
  return db.transaction((tx) => foldOnce(tx));
}

// The rollups plus the changes not folded yet, against the payments and attempts themselves, in one
// statement (one snapshot for both sides): every rollup key whose figures differ. `bins`: the
// placeholder of the time bins' starts.
const driftSql = (bins: string): string => `WITH ${FOLD_CTE},
change AS (${unfoldedPaymentChanges()}),
delivery AS (${unfoldedDeliveries()}),
raw_payment AS (${ALL_PAYMENTS}),
raw_delivery AS (${ALL_DELIVERIES}),
keyed AS (
  SELECT 'counts' AS rollup, tenant_id, mode, period, bucket_start, dimension || ':' || coalesce(key, '') || ':' || status AS key, payments AS have, amount AS have_amount, 0 AS want, 0 AS want_amount FROM report_payment_counts
  UNION ALL SELECT 'counts', c.tenant_id, c.mode, k.period, k.bucket_start, k.dimension || ':' || coalesce(k.key, '') || ':' || c.status, c.sign, c.sign * c.payout_amount, 0, 0 FROM change c ${countKeysOf('c')}
  UNION ALL SELECT 'counts', c.tenant_id, c.mode, k.period, k.bucket_start, k.dimension || ':' || coalesce(k.key, '') || ':' || c.status, 0, 0, 1, c.payout_amount FROM raw_payment c ${countKeysOf('c')}
  UNION ALL SELECT 'times', r.tenant_id, r.mode, r.period, r.bucket_start, b.key, b.value::bigint, 0, 0, 0 FROM report_outcome_times r CROSS JOIN LATERAL jsonb_each_text(r.bins) b
  UNION ALL SELECT 'times', c.tenant_id, c.mode, k.period, k.bucket_start, ${binOf('c.outcome_ms', bins)}::text, 1, 0, 0, 0 FROM change c ${timeKeysOf('c')} WHERE c.outcome_ms IS NOT NULL
  UNION ALL SELECT 'times', c.tenant_id, c.mode, k.period, k.bucket_start, ${binOf('c.outcome_ms', bins)}::text, 0, 0, 1, 0 FROM raw_payment c ${timeKeysOf('c')} WHERE c.outcome_ms IS NOT NULL
  UNION ALL SELECT 'attempts', r.tenant_id, r.mode, r.period, r.bucket_start, b.key, b.value::bigint, 0, 0, 0 FROM report_webhook_attempts r CROSS JOIN LATERAL jsonb_each_text(r.bins) b
  UNION ALL SELECT 'attempts', r.tenant_id, r.mode, r.period, r.bucket_start, o.outcome, o.n, 0, 0, 0
    FROM report_webhook_attempts r CROSS JOIN LATERAL (VALUES ('delivered', r.delivered), ('rejected', r.rejected), ('unreachable', r.unreachable)) o(outcome, n)
  UNION ALL SELECT 'attempts', d.tenant_id, d.mode, k.period, k.bucket_start, ${binOf('d.duration_ms', bins)}::text, 1, 0, 0, 0 FROM delivery d ${timeKeysOf('d')}
  UNION ALL SELECT 'attempts', d.tenant_id, d.mode, k.period, k.bucket_start, d.outcome, 1, 0, 0, 0 FROM delivery d ${timeKeysOf('d')}
  UNION ALL SELECT 'attempts', d.tenant_id, d.mode, k.period, k.bucket_start, ${binOf('d.duration_ms', bins)}::text, 0, 0, 1, 0 FROM raw_delivery d ${timeKeysOf('d')}
  UNION ALL SELECT 'attempts', d.tenant_id, d.mode, k.period, k.bucket_start, d.outcome, 0, 0, 1, 0 FROM raw_delivery d ${timeKeysOf('d')}
)
SELECT rollup, tenant_id, mode, period, bucket_start, key, sum(have)::text AS have, sum(want)::text AS want, sum(have_amount)::text AS have_amount, sum(want_amount)::text AS want_amount
  FROM keyed GROUP BY rollup, tenant_id, mode, period, bucket_start, key
HAVING sum(have) <> sum(want) OR sum(have_amount) <> sum(want_amount)
 LIMIT 100`;

/**
 * Rollup keys whose figures differ from the payments and attempts themselves (none when the fold is right); empty before the first build.
 * @internal Exported for its tests, not used elsewhere.
 */
export async function reportRollupDrift(db: Queryable): Promise<Record<string, unknown>[]> {
  if (!(await rollupsBuilt(db))) return [];
  const p = new Params();
  const { rows } = await db.query<Record<string, unknown>>(driftSql(p.add(TIME_BIN_STARTS)), p.values);
  return rows;
}
