// Payout batches as their callers see them (docs/payout-batches.md): the batch row its Idempotency-Key
// names, the result of each item, and the counts and totals read from its items' payments. Not to be
// confused with a payout *commit* (db/commit/payout-commit.ts), the transaction in which the committer
// writes many payouts at once: a payout batch's items go through those commits like any payout.
//
// Lock order (db/commit/README.md): these statements run outside any transaction and each writes rows of
// one kind only (a batch row, or its items), which only the request holding the batch writes.
import type { Mode } from '../../domain/partition.ts';
import type { PagePosition } from '../../domain/page-cursor.ts';
import type { Queryable } from '../database.ts';
import { newestFirst, Params } from './sql-params.ts';

export interface BatchScope {
  tenantId: string;
  mode: Mode;
}

type PayoutBatchStatus = 'receiving' | 'processing' | 'completed';

export interface PayoutBatchRow {
  id: string;
  idempotency_key: string;
  fingerprint: string;
  item_count: number;
  status: PayoutBatchStatus;
  leased_until: Date | null;
  created_at: Date;
  completed_at: Date | null;
}

const BATCH_COLUMNS = 'id, idempotency_key, fingerprint, item_count, status, leased_until, created_at, completed_at';

/** The rows of the scope's tenant and mode (`alias.` before the columns when given), its parameters added to `p`. */
const batchScope = (p: Params, scope: BatchScope, alias = '') =>
  `${alias}tenant_id = ${p.add(scope.tenantId)} AND ${alias}mode = ${p.add(scope.mode)}`;

export type BatchClaim =
  | { kind: 'new'; batch: PayoutBatchRow }
  | { kind: 'existing'; batch: PayoutBatchRow }
  /** The tenant already has `inProgressMax` batches receiving their items. */
  | { kind: 'too_many' };

/**
 * Creates the batch its key names, unless the key already names one (returned as it is), or unless the
 * partition already has `inProgressMax` batches whose requests are recording their items. The count
 * and the insert are one step per tenant and mode (a transaction advisory lock on them, held by this
 * transaction only, which waits for nothing else), so concurrent claims in any process never pass the
 * bound together. `tx` must be a transaction.
 */
export async function claimPayoutBatch(
  tx: Queryable,
  scope: BatchScope,
  batch: {
    id: string;
    key: string;
    fingerprint: string;
    itemCount: number;
    createdByKeyId: string;
    now: Date;
    leasedUntil: Date;
    inProgressMax: number;
  },
): Promise<BatchClaim> {
  const lock = new Params();
  await tx.query(
    `SELECT pg_advisory_xact_lock(hashtextextended('payout_batches:' || ${lock.add(scope.tenantId)} || ':' || ${lock.add(scope.mode)}, 0))`,
    lock.values,
  );
  const p = new Params();
  const [tenant, mode, at] = [p.add(scope.tenantId), p.add(scope.mode), p.add(batch.now)];
  const { rows } = await tx.query<PayoutBatchRow>(
    `INSERT INTO payout_batches (tenant_id, mode, id, idempotency_key, fingerprint, item_count, status, leased_until, created_by_key_id, created_at)
     SELECT ${tenant}, ${mode}, ${p.add(batch.id)}, ${p.add(batch.key)}, ${p.add(batch.fingerprint)}, ${p.add(batch.itemCount)}, 'receiving',
            ${p.add(batch.leasedUntil)}, ${p.add(batch.createdByKeyId)}, ${at}
      WHERE (SELECT count(*) FROM payout_batches
              WHERE tenant_id = ${tenant} AND mode = ${mode} AND status = 'receiving' AND leased_until > ${at}) < ${p.add(batch.inProgressMax)}
     ON CONFLICT (tenant_id, mode, idempotency_key) DO NOTHING
     RETURNING ${BATCH_COLUMNS}`,
    p.values,
  );
  if (rows[0]) return { kind: 'new', batch: rows[0] };
  const existing = await findPayoutBatchByKey(tx, scope, batch.key);
  return existing ? { kind: 'existing', batch: existing } : { kind: 'too_many' };
}

/** The batch an Idempotency-Key names, if any. */
export async function findPayoutBatchByKey(
  db: Queryable,
  scope: BatchScope,
  key: string,
): Promise<PayoutBatchRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<PayoutBatchRow>(
    `SELECT ${BATCH_COLUMNS} FROM payout_batches WHERE ${batchScope(p, scope)} AND idempotency_key = ${p.add(key)}`,
    p.values,
  );
  return rows[0];
}

/**
 * A retry takes over a batch whose request stopped recording its items (its lease has passed): true
 * when this request now holds it (a concurrent retry may have taken it first).
 */
export async function takeOverPayoutBatch(
  db: Queryable,
  scope: BatchScope,
  batch: PayoutBatchRow,
  now: Date,
  leasedUntil: Date,
): Promise<boolean> {
  const p = new Params();
  const { rowCount } = await db.query(
    `UPDATE payout_batches SET leased_until = ${p.add(leasedUntil)}
      WHERE ${batchScope(p, scope)} AND id = ${p.add(batch.id)} AND status = 'receiving' AND leased_until <= ${p.add(now)} AND leased_until = ${p.add(batch.leased_until)}`,
    p.values,
  );
  return rowCount === 1;
}

/** A request that failed lets a retry take its batch over at once instead of after the lease. */
export async function releasePayoutBatch(db: Queryable, scope: BatchScope, id: string, now: Date): Promise<void> {
  const p = new Params();
  const at = p.add(now);
  await db.query(
    `UPDATE payout_batches SET leased_until = ${at} WHERE ${batchScope(p, scope)} AND id = ${p.add(id)} AND status = 'receiving' AND leased_until > ${at}`,
    p.values,
  );
}

export interface BatchItemRecord {
  index: number;
  reference: string;
  paymentId: string | null;
  /** BS minor units the item asked to deliver, when known (a refused item's quote may not exist). */
  amount: bigint | null;
  refusal: { code: string; message: string; meta?: Record<string, unknown> } | null;
}

/**
 * Records the items' results and marks the batch received, in one statement, only while this request
 * still holds the batch (`lease`: the leased_until it set): a request that lost its batch to a retry
 * (it ran past its lease) writes nothing, and the retry's results stand. False when it wrote nothing.
 */
export async function recordPayoutBatchItems(
  db: Queryable,
  scope: BatchScope,
  batchId: string,
  lease: Date,
  items: readonly BatchItemRecord[],
  now: Date,
): Promise<boolean> {
  const p = new Params();
  const rows = p.unnest({
    item_index: ['integer', items.map((i) => i.index)],
    reference: ['text', items.map((i) => i.reference)],
    payment_id: ['uuid', items.map((i) => i.paymentId)],
    amount: ['bigint', items.map((i) => (i.amount === null ? null : i.amount.toString()))],
    refusal: ['jsonb', items.map((i) => (i.refusal ? JSON.stringify(i.refusal) : null))],
  });
  const [tenant, mode, batch, at, held] = [
    p.add(scope.tenantId),
    p.add(scope.mode),
    p.add(batchId),
    p.add(now),
    p.add(lease),
  ];
  const { rows: written } = await db.query<{ held: boolean }>(
    `WITH received AS (
       UPDATE payout_batches SET status = 'processing', leased_until = NULL, received_at = ${at}
        WHERE tenant_id = ${tenant} AND mode = ${mode} AND id = ${batch} AND status = 'receiving' AND leased_until = ${held}
       RETURNING 1),
     items AS (
       INSERT INTO payout_batch_items (tenant_id, mode, batch_id, item_index, reference, payment_id, amount, refusal)
       SELECT ${tenant}, ${mode}, ${batch}, v.item_index, v.reference, v.payment_id, v.amount, v.refusal FROM ${rows}
        WHERE EXISTS (SELECT 1 FROM received)
       ON CONFLICT (tenant_id, mode, batch_id, item_index)
         DO UPDATE SET reference = excluded.reference, payment_id = excluded.payment_id, amount = excluded.amount, refusal = excluded.refusal
       RETURNING 1)
     SELECT EXISTS (SELECT 1 FROM received) AS held, (SELECT count(*) FROM items) AS items`,
    p.values,
  );
  return written[0]?.held === true;
}

/**
 * An item's payment, found by its primary key: one probe per item. As a plain join the planner, which
 * cannot know how few items a batch has, hashed the partition's payments instead: 400 ms for a batch
 * of 1,000 once the table held 100,000 payments, and growing with it (each answer of the payroll bench
 * slower than the last). The LIMIT keeps the subquery from being flattened into that join.
 */
const PAYMENT_OF_ITEM = `SELECT status, status_reason, payout_amount, updated_at FROM payments
   WHERE tenant_id = i.tenant_id AND id = i.payment_id LIMIT 1`;

export interface BatchItemRow {
  item_index: number;
  reference: string;
  payment_id: string | null;
  refusal: { code: string; message: string; meta?: Record<string, unknown> } | null;
  status: string | null;
  status_reason: string | null;
  amount: bigint | null;
  updated_at: Date | null;
}

/** The batch and every item with its payment as it stands, in item order. */
export async function findPayoutBatch(
  db: Queryable,
  scope: BatchScope,
  id: string,
): Promise<{ batch: PayoutBatchRow; items: BatchItemRow[] } | undefined> {
  const read = new Params();
  const { rows } = await db.query<PayoutBatchRow>(
    `SELECT ${BATCH_COLUMNS} FROM payout_batches WHERE ${batchScope(read, scope)} AND id = ${read.add(id)}`,
    read.values,
  );
  const batch = rows[0];
  if (!batch) return undefined;
  const params = new Params();
  const items = await db.query<BatchItemRow>(
    `SELECT i.item_index, i.reference, i.payment_id, i.refusal, p.status, p.status_reason, coalesce(p.payout_amount, i.amount) AS amount, p.updated_at
       FROM payout_batch_items i
       LEFT JOIN LATERAL (${PAYMENT_OF_ITEM}) p ON true
      WHERE ${batchScope(params, scope, 'i.')} AND i.batch_id = ${params.add(id)}
      ORDER BY i.item_index`,
    params.values,
  );
  return { batch, items: items.rows };
}

export interface BatchTally {
  batch_id: string;
  /** A payment status, or `refused`. */
  status: string;
  items: number;
  amount: bigint;
  /** The latest change of those payments (null for refusals). */
  last_change: Date | null;
}

/** Items by status and their delivered amounts, for each of `batchIds`. */
export async function tallyPayoutBatches(
  db: Queryable,
  scope: BatchScope,
  batchIds: readonly string[],
): Promise<BatchTally[]> {
  if (batchIds.length === 0) return [];
  const params = new Params();
  const { rows } = await db.query<BatchTally>(
    `SELECT i.batch_id, coalesce(p.status, 'refused') AS status, count(*)::integer AS items,
            coalesce(sum(coalesce(p.payout_amount, i.amount)), 0)::bigint AS amount, max(p.updated_at) AS last_change
       FROM payout_batch_items i
       LEFT JOIN LATERAL (${PAYMENT_OF_ITEM}) p ON true
      WHERE ${batchScope(params, scope, 'i.')} AND i.batch_id = ANY(${params.add(batchIds)}::uuid[])
      GROUP BY i.batch_id, coalesce(p.status, 'refused')`,
    params.values,
  );
  return rows;
}

/** Marks a batch completed once every item is final, at the time its last payment became final. */
export async function completePayoutBatch(
  db: Queryable,
  scope: BatchScope,
  id: string,
  completedAt: Date,
): Promise<void> {
  const p = new Params();
  await db.query(
    `UPDATE payout_batches SET status = 'completed', completed_at = ${p.add(completedAt)} WHERE ${batchScope(p, scope)} AND id = ${p.add(id)} AND status = 'processing'`,
    p.values,
  );
}

/** One page of the partition's batches, newest first. */
export async function listPayoutBatches(
  db: Queryable,
  scope: BatchScope,
  page: { limit: number; after?: PagePosition },
): Promise<Array<PayoutBatchRow & { created_at_us: bigint }>> {
  const params = new Params();
  return newestFirst<PayoutBatchRow & { created_at_us: bigint }>(db, {
    columns: BATCH_COLUMNS,
    from: 'payout_batches',
    time: 'created_at',
    params,
    where: [`tenant_id = ${params.add(scope.tenantId)}`, `mode = ${params.add(scope.mode)}`],
    limit: page.limit,
    after: page.after,
  });
}
