import { microsToTimestamp, type PagePosition } from '../../domain/page-cursor.ts';
import type { PaymentStatus } from '../../domain/payment-state.ts';
import type { Queryable } from '../database.ts';
import { Params } from './sql-params.ts';
import type { PaymentRow } from './payments.ts';
import type { Mode } from '../../domain/partition.ts';

// The statement: payments newest first by (created_at, id), read by keyset.
// Every query here is one of the plans that migration 007 indexes for; see `listStatement`.

/** The payment columns a statement row shows. */
export type StatementColumns = Pick<
  PaymentRow,
  | 'id'
  | 'customer_id'
  | 'beneficiary_id'
  | 'status'
  | 'status_reason'
  | 'source_asset'
  | 'source_amount'
  | 'payout_asset'
  | 'payout_amount'
  | 'fee_amount'
  | 'method'
  | 'bank_reference'
  | 'settled_at'
  | 'created_at'
  | 'metadata'
  | 'batch_id'
>;

/** A statement row as read, with its keyset position. */
export type StatementPayment = StatementColumns & {
  /** created_at in exact microseconds since the epoch: the keyset position (a Date keeps only ms). */
  created_at_us: bigint;
};

export interface StatementFilter {
  status?: PaymentStatus;
  beneficiaryId?: string;
  customerId?: string;
  /** Only the payments this payout batch created. */
  batchId?: string;
  /** Only payments whose metadata holds this key with exactly this string value. */
  metadata?: { key: string; value: string };
  /** Settled at or after this instant (the start of the `from` day in Caracas). */
  settledFrom?: Date;
  /** Settled before this instant (the start of the day after `to` in Caracas). */
  settledBefore?: Date;
  /** Created at or after this instant. */
  createdFrom?: Date;
  /** Created before this instant. */
  createdBefore?: Date;
}

export interface StatementPageRequest {
  /** Rows wanted; the query reads one more so the caller learns whether another page exists. */
  limit: number;
  /** Strictly after this position in (created_at DESC, id DESC) order. */
  after?: PagePosition;
}

// extract(epoch …) is numeric on PostgreSQL 14+, so the microsecond value is exact.
const COLUMNS = `id, customer_id, beneficiary_id, status, status_reason, source_asset, source_amount, payout_asset,
  payout_amount, fee_amount, method, bank_reference, settled_at, created_at, metadata, batch_id,
  (extract(epoch FROM created_at) * 1000000)::bigint AS created_at_us`;

/** The settlement day bucket; must be written exactly as in the indexes of migration 007. */
const SETTLED_DAY = `(settled_at AT TIME ZONE 'America/Caracas')::date`;

/**
 * One page of the statement: at most `limit + 1` payments of the (tenant, mode) partition matching
 * `filter`, newest first, strictly after `page.after`.
 *
 * Two plans, each served by an index of migration 007:
 * - no settlement range, or a range with `beneficiaryId`/`customerId` (both selective): one ordered
 *   index scan, on the index whose leading equality columns match the filter;
 * - a metadata pair (an order or invoice id: selective): the GIN index of migration 017 finds the
 *   matching payments, sorted afterwards; with a range too, the range is checked on those rows;
 * - a settlement range (`from`/`to`) otherwise: a merge of per-settlement-day buckets
 *   (`listBySettlementDays`), because settled_at and created_at are correlated and a single ordered
 *   scan filtering on settled_at would skip every payment newer than the range first.
 */
export async function listStatement(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  filter: StatementFilter,
  page: StatementPageRequest,
): Promise<StatementPayment[]> {
  const ranged = filter.settledFrom !== undefined || filter.settledBefore !== undefined;
  if (
    ranged &&
    filter.beneficiaryId === undefined &&
    filter.customerId === undefined &&
    filter.batchId === undefined &&
    filter.metadata === undefined
  ) {
    return listBySettlementDays(db, tenantId, mode, filter, page);
  }
  return listByCreation(db, tenantId, mode, filter, page);
}

/** The predicates every plan shares: partition, filter and keyset position. */
function conditions(
  params: Params,
  tenantId: string,
  mode: Mode,
  filter: StatementFilter,
  after: PagePosition | undefined,
): string[] {
  const where = [`tenant_id = ${params.add(tenantId)}`, `mode = ${params.add(mode)}`];
  if (filter.status !== undefined) where.push(`status = ${params.add(filter.status)}`);
  if (filter.beneficiaryId !== undefined) where.push(`beneficiary_id = ${params.add(filter.beneficiaryId)}::uuid`);
  if (filter.customerId !== undefined) where.push(`customer_id = ${params.add(filter.customerId)}::uuid`);
  // `batch_id IS NOT NULL` is the condition of the index payments_by_batch (migration 031).
  if (filter.batchId !== undefined)
    where.push('batch_id IS NOT NULL', `batch_id = ${params.add(filter.batchId)}::uuid`);
  // Containment of a one-pair object is what jsonb_path_ops indexes; the value is a JSON string, so
  // only a string equal to it matches. `<> '{}'` is the index's own condition (migration 019): only
  // payments with metadata are in it, and a payment without any never matches a key anyway.
  if (filter.metadata !== undefined) {
    where.push(`metadata <> '{}'::jsonb`);
    where.push(
      `metadata @> jsonb_build_object(${params.add(filter.metadata.key)}::text, ${params.add(filter.metadata.value)}::text)`,
    );
  }
  if (filter.settledFrom !== undefined || filter.settledBefore !== undefined) where.push('settled_at IS NOT NULL');
  if (filter.settledFrom !== undefined) where.push(`settled_at >= ${params.add(filter.settledFrom)}::timestamptz`);
  if (filter.settledBefore !== undefined) where.push(`settled_at < ${params.add(filter.settledBefore)}::timestamptz`);
  // A creation range bounds the ordered scan of every plan: it starts at createdBefore and stops at createdFrom.
  if (filter.createdFrom !== undefined) where.push(`created_at >= ${params.add(filter.createdFrom)}::timestamptz`);
  if (filter.createdBefore !== undefined) where.push(`created_at < ${params.add(filter.createdBefore)}::timestamptz`);
  if (after !== undefined) {
    where.push(
      `(created_at, id) < (${params.add(microsToTimestamp(after.createdAtUs))}::timestamptz, ${params.add(after.id)}::uuid)`,
    );
  }
  return where;
}

async function listByCreation(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  filter: StatementFilter,
  page: StatementPageRequest,
): Promise<StatementPayment[]> {
  const params = new Params();
  const where = conditions(params, tenantId, mode, filter, page.after);
  const { rows } = await db.query<StatementPayment>(
    `SELECT ${COLUMNS} FROM payments
      WHERE ${where.join(' AND ')}
      ORDER BY created_at DESC, id DESC
      LIMIT ${params.add(page.limit + 1)}`,
    params.values,
  );
  return rows;
}

/**
 * The settlement days to visit: from the Caracas day of `settledFrom` to that of the last instant
 * before `settledBefore`, clamped to the days on which the partition has settled payments at all (so
 * an open or very wide range costs no more than the partition's history). The days are computed by
 * PostgreSQL with the same expression as the index, so every payment settled in the range lies in
 * one of them whatever the time-zone database says: the exact range is still checked on settled_at.
 */
async function settlementDaySpan(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  filter: StatementFilter,
): Promise<{ first: string; days: number } | undefined> {
  const params = new Params();
  const where = [`tenant_id = ${params.add(tenantId)}`, `mode = ${params.add(mode)}`, 'settled_at IS NOT NULL'];
  if (filter.status !== undefined) where.push(`status = ${params.add(filter.status)}`);
  const from =
    filter.settledFrom === undefined
      ? 'NULL::date'
      : `(${params.add(filter.settledFrom)}::timestamptz AT TIME ZONE 'America/Caracas')::date`;
  const to =
    filter.settledBefore === undefined
      ? 'NULL::date'
      : `((${params.add(filter.settledBefore)}::timestamptz - interval '1 microsecond') AT TIME ZONE 'America/Caracas')::date`;
  // min and max of the bucket expression are the two ends of a settled-day index: two descents.
  // greatest/least ignore NULL, so an open end takes the partition's first or last day.
  const { rows } = await db.query<{ first: string; days: number }>(
    `SELECT first::text AS first, (last - first + 1)::integer AS days
       FROM (SELECT greatest(${from}, extent.first) AS first, least(${to}, extent.last) AS last
               FROM (SELECT min(${SETTLED_DAY}) AS first, max(${SETTLED_DAY}) AS last
                       FROM payments WHERE ${where.join(' AND ')}) extent
              WHERE extent.first IS NOT NULL) span
      WHERE first <= last`,
    params.values,
  );
  return rows[0];
}

/**
 * A settlement range as a merge of per-day buckets (index payments_statement_[status_]settled_day,
 * each day's payments in statement order):
 *   tops  — the newest payment of each day after the cursor: one index descent per day;
 *   floor — in the day holding the newest of those, the (limit + 1)-th payment: that day alone fills
 *           the page at or above it, so nothing below it can be on the page;
 *   page  — the days whose newest payment is at or above the floor, each read down to the floor
 *           (at most limit + 1 entries), merged.
 * A page thus costs one descent per day plus about limit + 1 entries per day that really contributes
 * (usually one or two: most payments settle the day they are created), all from the index; only the
 * page's own rows are read from the table. Without the floor every day would give limit + 1 entries,
 * which is what an export in batches of 1000 over a quarter cannot afford.
 */
async function listBySettlementDays(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  filter: StatementFilter,
  page: StatementPageRequest,
): Promise<StatementPayment[]> {
  const span = await settlementDaySpan(db, tenantId, mode, filter);
  if (span === undefined) return [];
  const params = new Params();
  const where = conditions(params, tenantId, mode, filter, page.after).join(' AND ');
  const firstDay = params.add(span.first);
  const inDay = (n: string) => `${where} AND ${SETTLED_DAY} = ${firstDay}::date + ${n}`;
  const lastOffset = params.add(span.days - 1);
  const take = params.add(page.limit + 1);
  const floorOffset = params.add(page.limit);
  const tenant = params.add(tenantId);
  const { rows } = await db.query<StatementPayment>(
    `WITH tops AS (
       SELECT day.n, top.created_at, top.id
         FROM generate_series(0, ${lastOffset}::integer) AS day(n)
         CROSS JOIN LATERAL (
           SELECT created_at, id FROM payments WHERE ${inDay('day.n')}
            ORDER BY created_at DESC, id DESC LIMIT 1) top
     ),
     floor AS (
       SELECT below.created_at, below.id
         FROM (SELECT n FROM tops ORDER BY created_at DESC, id DESC LIMIT 1) lead
         CROSS JOIN LATERAL (
           SELECT created_at, id FROM payments WHERE ${inDay('lead.n')}
            ORDER BY created_at DESC, id DESC OFFSET ${floorOffset} LIMIT 1) below
     ),
     bound AS (
       SELECT coalesce((SELECT created_at FROM floor), '-infinity'::timestamptz) AS created_at,
              coalesce((SELECT id FROM floor), '00000000-0000-0000-0000-000000000000'::uuid) AS id
     ),
     page AS (
       SELECT part.created_at AS page_created_at, part.id AS page_id
         FROM tops CROSS JOIN bound
         CROSS JOIN LATERAL (
           SELECT created_at, id FROM payments
            WHERE ${inDay('tops.n')} AND (created_at, id) >= (bound.created_at, bound.id)
            ORDER BY created_at DESC, id DESC LIMIT ${take}) part
        WHERE (tops.created_at, tops.id) >= (bound.created_at, bound.id)
        ORDER BY part.created_at DESC, part.id DESC
        LIMIT ${take}
     )
     SELECT ${COLUMNS} FROM page JOIN payments ON payments.tenant_id = ${tenant} AND payments.id = page.page_id
      ORDER BY created_at DESC, id DESC`,
    params.values,
  );
  return rows;
}
