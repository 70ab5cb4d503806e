import type { Mode } from '../../domain/api-keys.ts';
import type { Asset } from '../../domain/money.ts';
import { assertTransition, type PaymentStatus, type TransitionActor } from '../../domain/payment-state.ts';
import type { Queryable } from '../database.ts';

export interface BeneficiarySnapshot {
  fullName: string;
  nationalId: string;
  bankCode: string;
  accountNumber: string | null;
  phone: string | null;
  instrument: 'pago_movil' | 'transferencia';
}

export interface PaymentRow {
  tenant_id: string;
  mode: Mode;
  id: string;
  customer_id: string | null;
  beneficiary_id: string | null;
  quote_id: string | null;
  status: PaymentStatus;
  status_reason: string | null;
  message: string | null;
  source_asset: Asset;
  source_amount: bigint;
  payout_asset: Asset;
  payout_amount: bigint;
  fee_amount: bigint;
  method: 'pago_movil' | 'transferencia' | null;
  method_requested: 'pago_movil' | 'transferencia';
  method_changed: boolean;
  compensated: boolean;
  bank_reference: string | null;
  beneficiary: BeneficiarySnapshot;
  sender: Record<string, string> | null;
  rail: string | null;
  rail_acknowledged_at: Date | null;
  next_check_at: Date | null;
  check_attempts: number;
  settled_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface TransitionRow {
  from_status: PaymentStatus | null;
  to_status: PaymentStatus;
  reason: string | null;
  actor: TransitionActor;
  metadata: Record<string, unknown>;
  created_at: Date;
}

export const PAYMENT_COLUMNS = `tenant_id, mode, id, customer_id, beneficiary_id, quote_id, status, status_reason, message, source_asset,
  source_amount, payout_asset, payout_amount, fee_amount, method, method_requested, method_changed, compensated,
  bank_reference, beneficiary, sender, rail, rail_acknowledged_at, next_check_at, check_attempts, settled_at, created_at, updated_at`;

export type NewPayment = Omit<PaymentRow, 'rail_acknowledged_at' | 'check_attempts' | 'updated_at' | 'settled_at' | 'bank_reference' | 'compensated'>;

export async function insertPayment(tx: Queryable, p: NewPayment): Promise<PaymentRow> {
  const { rows } = await tx.query<PaymentRow>(
    `INSERT INTO payments (tenant_id, mode, id, customer_id, beneficiary_id, quote_id, status, status_reason, message,
       source_asset, source_amount, payout_asset, payout_amount, fee_amount, method, method_requested, method_changed,
       beneficiary, sender, rail, next_check_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $22)
     RETURNING ${PAYMENT_COLUMNS}`,
    [
      p.tenant_id, p.mode, p.id, p.customer_id, p.beneficiary_id, p.quote_id, p.status, p.status_reason, p.message,
      p.source_asset, p.source_amount, p.payout_asset, p.payout_amount, p.fee_amount, p.method, p.method_requested,
      p.method_changed, JSON.stringify(p.beneficiary), p.sender ? JSON.stringify(p.sender) : null, p.rail, p.next_check_at,
      p.created_at,
    ],
  );
  return rows[0]!;
}

export async function findPayment(db: Queryable, tenantId: string, mode: Mode, id: string): Promise<PaymentRow | undefined> {
  const { rows } = await db.query<PaymentRow>(`SELECT ${PAYMENT_COLUMNS} FROM payments WHERE tenant_id = $1 AND mode = $2 AND id = $3`, [tenantId, mode, id]);
  return rows[0];
}

export async function insertTransition(
  tx: Queryable,
  tenantId: string,
  paymentId: string,
  t: Omit<TransitionRow, 'created_at'> & { created_at: Date },
): Promise<void> {
  assertTransition(t.from_status, t.to_status);
  await tx.query(
    `INSERT INTO payment_transitions (tenant_id, payment_id, from_status, to_status, reason, actor, metadata, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [tenantId, paymentId, t.from_status, t.to_status, t.reason, t.actor, JSON.stringify(t.metadata), t.created_at],
  );
}

export interface TransitionChange {
  to: PaymentStatus;
  reason: string | null;
  message?: string | null;
  bankReference?: string;
  settledAt?: Date;
  compensated?: boolean;
  feeAmount?: bigint;
  railAcknowledgedAt?: Date;
  nextCheckAt?: Date | null;
}

/**
 * Moves a payment from `from` to `change.to` if, and only if, it is still in `from`. Returns the new
 * row, or undefined when somebody else moved it first (the caller then does nothing more).
 */
export async function transitionPayment(
  tx: Queryable,
  tenantId: string,
  id: string,
  from: PaymentStatus,
  change: TransitionChange,
  now: Date,
): Promise<PaymentRow | undefined> {
  assertTransition(from, change.to);
  const { rows } = await tx.query<PaymentRow>(
    `UPDATE payments SET
        status = $4,
        status_reason = $5,
        message = CASE WHEN $6::boolean THEN $7 ELSE message END,
        bank_reference = coalesce($8, bank_reference),
        settled_at = coalesce($9, settled_at),
        compensated = coalesce($10, compensated),
        fee_amount = coalesce($11, fee_amount),
        rail_acknowledged_at = coalesce($12, rail_acknowledged_at),
        next_check_at = CASE WHEN $13::boolean THEN $14 ELSE next_check_at END,
        updated_at = $15
      WHERE tenant_id = $1 AND id = $2 AND status = $3
      RETURNING ${PAYMENT_COLUMNS}`,
    [
      tenantId, id, from, change.to, change.reason, change.message !== undefined, change.message ?? null,
      change.bankReference ?? null, change.settledAt ?? null, change.compensated ?? null, change.feeAmount ?? null,
      change.railAcknowledgedAt ?? null, change.nextCheckAt !== undefined, change.nextCheckAt ?? null, now,
    ],
  );
  return rows[0];
}

export async function listTransitions(db: Queryable, tenantId: string, paymentId: string): Promise<TransitionRow[]> {
  const { rows } = await db.query<TransitionRow>(
    `SELECT from_status, to_status, reason, actor, metadata, created_at FROM payment_transitions
      WHERE tenant_id = $1 AND payment_id = $2 ORDER BY seq`,
    [tenantId, paymentId],
  );
  return rows;
}

/**
 * The reaper's claim: due unresolved payments, each leased until `leaseUntil` so that another
 * reaper process skips them (SKIP LOCKED) and a crashed reaper's claim simply expires.
 */
export async function claimUnresolvedPayments(tx: Queryable, now: Date, leaseUntil: Date, limit: number): Promise<PaymentRow[]> {
  const { rows } = await tx.query<PaymentRow>(
    `UPDATE payments SET next_check_at = $2, check_attempts = check_attempts + 1
      WHERE (tenant_id, id) IN (
        SELECT tenant_id, id FROM payments
         WHERE status IN ('submitted', 'unknown') AND next_check_at <= $1
         ORDER BY next_check_at
         LIMIT $3
         FOR UPDATE SKIP LOCKED)
      RETURNING ${PAYMENT_COLUMNS}`,
    [now, leaseUntil, limit],
  );
  return rows;
}

export async function scheduleCheck(tx: Queryable, tenantId: string, id: string, at: Date): Promise<void> {
  await tx.query(`UPDATE payments SET next_check_at = $3 WHERE tenant_id = $1 AND id = $2 AND status IN ('submitted', 'unknown')`, [tenantId, id, at]);
}

export async function findPaymentById(db: Queryable, id: string): Promise<PaymentRow | undefined> {
  const { rows } = await db.query<PaymentRow>(`SELECT ${PAYMENT_COLUMNS} FROM payments WHERE id = $1`, [id]);
  return rows[0];
}

/**
 * The rail accepted submitted payments asynchronously: for each, the self-transition submitted →
 * submitted (rail_accepted_async) and its history row, all in one statement (one implicit
 * transaction). Returns, per item, the moved row, or undefined when that payment had already moved
 * on or been acknowledged.
 */
export async function acknowledgeRailAcceptances(
  db: Queryable,
  items: ReadonlyArray<{ tenantId: string; id: string; nextCheckAt: Date; actor: TransitionActor }>,
  change: { message: string; at: Date },
): Promise<Array<PaymentRow | undefined>> {
  assertTransition('submitted', 'submitted');
  const qualified = PAYMENT_COLUMNS.split(',').map((c) => `p.${c.trim()}`).join(', ');
  const { rows } = await db.query<PaymentRow & { actor: TransitionActor }>(
    `WITH v AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::text[]) AS v(tenant_id, id, next_check_at, actor)
     ), moved AS (
       UPDATE payments p SET status_reason = 'rail_accepted_async', message = $5, rail_acknowledged_at = $6,
              next_check_at = greatest(p.next_check_at, v.next_check_at), updated_at = $6
         FROM v
        WHERE p.tenant_id = ANY($1::uuid[]) AND p.id = ANY($2::uuid[])
          AND p.tenant_id = v.tenant_id AND p.id = v.id AND p.status = 'submitted' AND p.rail_acknowledged_at IS NULL
        RETURNING ${qualified}, v.actor
     ), history AS (
       INSERT INTO payment_transitions (tenant_id, payment_id, from_status, to_status, reason, actor, metadata, created_at)
       SELECT tenant_id, id, 'submitted', 'submitted', 'rail_accepted_async', actor,
              jsonb_build_object('methodRequested', method_requested, 'methodUsed', method), $6
         FROM moved
     )
     SELECT * FROM moved`,
    [items.map((i) => i.tenantId), items.map((i) => i.id), items.map((i) => i.nextCheckAt), items.map((i) => i.actor), change.message, change.at],
  );
  const byId = new Map(rows.map(({ actor: _actor, ...row }) => [row.id, row as PaymentRow]));
  return items.map((item) => byId.get(item.id));
}
