import { FAILURE_STATUSES } from '../../domain/payout-report.ts';

// SQL shared by the report fold (report-rollups.ts) and the report's reads (payout-report.ts): the
// rollups' buckets, and the changes the fold has not taken in yet. Both sides use these same texts,
// so what a read adds on top of the rollups is exactly what the next fold will add to them.

/** The report's bucket boundaries: Caracas hours and days, whatever the session's time zone. */
const hourOf = (at: string): string =>
  `(date_trunc('hour', ${at} AT TIME ZONE 'America/Caracas') AT TIME ZONE 'America/Caracas')`;
const dayOf = (at: string): string =>
  `(date_trunc('day', ${at} AT TIME ZONE 'America/Caracas') AT TIME ZONE 'America/Caracas')`;

/**
 * The rollup rows a payment row `c` counts in: its hour and Caracas day by status, and its day by
 * bank, instrument and (failures only) reason, as `k(period, bucket_start, dimension, key)`.
 */
export const countKeysOf = (c: string): string => `CROSS JOIN LATERAL (VALUES
     ('hour', ${hourOf(`${c}.created_at`)}, 'status', NULL::text),
     ('day', ${dayOf(`${c}.created_at`)}, 'status', NULL::text),
     ('day', ${dayOf(`${c}.created_at`)}, 'bank', ${c}.bank_code),
     ('day', ${dayOf(`${c}.created_at`)}, 'method', ${c}.method),
     ('day', ${dayOf(`${c}.created_at`)}, 'reason', ${c}.reason)
   ) k(period, bucket_start, dimension, key)
   WHERE k.dimension <> 'reason' OR ${c}.status IN ${REASONED_STATUSES}`;

/** The hour and Caracas day of a row's `created_at`, as `k(period, bucket_start)`. */
export const timeKeysOf = (row: string): string =>
  `CROSS JOIN LATERAL (VALUES ('hour', ${hourOf(`${row}.created_at`)}), ('day', ${dayOf(`${row}.created_at`)})) k(period, bucket_start)`;

/** The start of the time bin of a duration in ms: the last of the bins' starts (`bins`, the placeholder of their bigint[]) at or below it. */
export const binOf = (ms: string, bins: string): string =>
  `(${bins}::bigint[])[width_bucket(${ms}, ${bins}::bigint[])]`;

/** Statuses whose reason the report tallies (failure reasons), as an SQL list. */
export const REASONED_STATUSES = `(${FAILURE_STATUSES.map((s) => `'${s}'`).join(', ')})`;

// Time to the outcome of payment `p`: to settled_at for payments that settled (returned and
// reversed ones too, which keep it); to the last change for failed ones, which a failure is (a
// failed payment is never written again). Null for a payment without an outcome.
export const outcomeMsOf = (p: string): string => `CASE WHEN ${p}.settled_at IS NOT NULL OR ${p}.status = 'failed'
  THEN greatest(0, floor(extract(epoch FROM coalesce(${p}.settled_at, ${p}.updated_at) - ${p}.created_at) * 1000))::bigint END`;

/** A webhook delivery attempt's outcome, from its row `d`. */
const attemptOutcomeOf = (d: string): string =>
  `CASE WHEN ${d}.ok THEN 'delivered' WHEN ${d}.status_code IS NOT NULL THEN 'rejected' ELSE 'unreachable' END`;

/** The fold's snapshot as the CTE `fold`, which every statement reading unfolded history names. */
export const FOLD_CTE = `fold AS (SELECT folded FROM report_fold)`;

/** Whether the fold has built the rollups: one row, `built`. */
export const ROLLUPS_BUILT_SQL = 'SELECT folded IS NOT NULL AS built FROM report_fold';

// A history row is folded when its transaction is visible in the fold's snapshot (FOLD_CTE); rows from before the rollups existed carry no txid and were
// taken in by the first build. Every later transaction's id is at or above the snapshot's xmin,
// so the index on txid finds the rest in one range.
const notFolded = (row: string): string =>
  `${row}.txid >= (SELECT pg_snapshot_xmin(folded) FROM fold) AND NOT pg_visible_in_snapshot(${row}.txid, (SELECT folded FROM fold))`;

/**
 * The payment changes not folded yet, as signed rows: a transition takes its payment out of the
 * status it left (-1) and into the one it reached (+1), with the reason of a failure and the time
 * to an outcome reached. A payment's creation is its first transition (from no status). What a
 * row is counted by (creation time, bank, instrument, amount) never changes after creation.
 * `where` narrows the payments (p).
 */
export function unfoldedPaymentChanges(where = 'true'): string {
  return `SELECT p.tenant_id, p.mode, p.created_at, p.bank_code, p.method, p.payout_amount, c.status, c.reason, c.sign, c.outcome_ms
    FROM payment_transitions t
    JOIN payments p ON p.tenant_id = t.tenant_id AND p.id = t.payment_id
   CROSS JOIN LATERAL (VALUES
     (t.from_status, NULL::text, -1, NULL::bigint),
     (t.to_status, CASE WHEN t.to_status IN ${REASONED_STATUSES} THEN p.status_reason END, 1,
      CASE WHEN t.to_status IN ('settled', 'failed') THEN ${outcomeMsOf('p')} END)
   ) c(status, reason, sign, outcome_ms)
   WHERE ${notFolded('t')} AND t.from_status IS DISTINCT FROM t.to_status AND c.status IS NOT NULL AND ${where}`;
}

/** Every payment as it is now, in the shape of unfoldedPaymentChanges: what a first build folds. */
export const ALL_PAYMENTS = `SELECT p.tenant_id, p.mode, p.created_at, p.bank_code, p.method, p.payout_amount, p.status,
    CASE WHEN p.status IN ${REASONED_STATUSES} THEN p.status_reason END AS reason, 1 AS sign, ${outcomeMsOf('p')} AS outcome_ms
  FROM payments p`;

/** The webhook delivery attempts not folded yet; `where` narrows them (d). */
export function unfoldedDeliveries(where = 'true'): string {
  return `SELECT d.tenant_id, d.mode, d.created_at, ${attemptOutcomeOf('d')} AS outcome, d.duration_ms
    FROM webhook_deliveries d WHERE ${notFolded('d')} AND ${where}`;
}

/** Every webhook delivery attempt, in the shape of unfoldedDeliveries. */
export const ALL_DELIVERIES = `SELECT d.tenant_id, d.mode, d.created_at, ${attemptOutcomeOf('d')} AS outcome, d.duration_ms FROM webhook_deliveries d`;

/** The tenants of a scope, as the CTE `scope`: `tenant` is the placeholder of one tenant's id, or of null for every customer tenant (tenants is a small table). */
export const scopeOf = (tenant: string): string => `scope AS (
  SELECT id AS tenant_id FROM tenants WHERE CASE WHEN ${tenant}::uuid IS NULL THEN NOT is_platform ELSE id = ${tenant}::uuid END
)`;
