import type { Metadata } from '../../domain/metadata.ts';
import type { Asset } from '../../domain/money.ts';
import type { PaymentStatus, TransitionActor } from '../../domain/payment-state.ts';
import type { Queryable } from '../database.ts';
import type { Mode } from '../../domain/partition.ts';
import { Params } from './sql-params.ts';

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
  next_check_at: Date | null;
  check_attempts: number;
  /** The Caracas day whose limit counters the payout consumed (null: it consumed none). */
  usage_day: string | null;
  /** The tenant account the payout was charged to (null: charged nothing). */
  funding_account: 'prefunding' | 'credit_receivable' | null;
  /** When the reaper stopped asking the rail (null: it still asks, or the payment is resolved). */
  resolution_parked_at: Date | null;
  settled_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** The payout's metadata as sent ({} when none was). */
  metadata: Metadata;
  /** The API key that created the payment (null: made before keys were recorded). Never in a public answer. */
  created_by_key_id: string | null;
  /** The payout batch that created the payment (null: a single payout). */
  batch_id: string | null;
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
  bank_reference, beneficiary, sender, rail, next_check_at, check_attempts, usage_day::text AS usage_day, funding_account,
  resolution_parked_at, settled_at, created_at, updated_at, metadata, created_by_key_id, batch_id`;

export type NewPayment = Omit<
  PaymentRow,
  'check_attempts' | 'updated_at' | 'settled_at' | 'bank_reference' | 'compensated' | 'resolution_parked_at'
>;

/** The row a new payment is once inserted: what the database fills in, filled in. */
export function insertedPayment(p: NewPayment): PaymentRow {
  return {
    ...p,
    check_attempts: 0,
    updated_at: p.created_at,
    settled_at: null,
    bank_reference: null,
    compensated: false,
    resolution_parked_at: null,
  };
}

export async function findPayment(
  db: Queryable,
  tenantId: string,
  mode: Mode,
  id: string,
): Promise<PaymentRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<PaymentRow>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE tenant_id = ${p.add(tenantId)} AND mode = ${p.add(mode)} AND id = ${p.add(id)}`,
    p.values,
  );
  return rows[0];
}

export async function listTransitions(db: Queryable, tenantId: string, paymentId: string): Promise<TransitionRow[]> {
  const p = new Params();
  const { rows } = await db.query<TransitionRow>(
    `SELECT from_status, to_status, reason, actor, metadata, created_at FROM payment_transitions
      WHERE tenant_id = ${p.add(tenantId)} AND payment_id = ${p.add(paymentId)} ORDER BY seq`,
    p.values,
  );
  return rows;
}

/**
 * The reaper's claim: due unresolved payments, each leased until `leaseUntil` so that another
 * reaper process skips them (SKIP LOCKED) and a crashed reaper's claim simply expires.
 */
export async function claimUnresolvedPayments(
  tx: Queryable,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<PaymentRow[]> {
  const p = new Params();
  const { rows } = await tx.query<PaymentRow>(
    `UPDATE payments SET next_check_at = ${p.add(leaseUntil)}, check_attempts = check_attempts + 1
      WHERE (tenant_id, id) IN (
        SELECT tenant_id, id FROM payments
         WHERE status IN ('submitted', 'unknown') AND next_check_at <= ${p.add(now)}
         ORDER BY next_check_at
         LIMIT ${p.add(limit)}
         FOR UPDATE SKIP LOCKED)
      RETURNING ${PAYMENT_COLUMNS}`,
    p.values,
  );
  return rows;
}

/**
 * Gives back a claimed payment the reaper may not act on yet: its payout path may still be sending it
 * (see Reaper.ask). Its next question comes at `at`, and the claim's question is not counted against
 * it. Only a payment still `submitted`: one the payout path has resolved meanwhile keeps its schedule.
 */
export async function deferResolution(
  db: Queryable,
  payment: Pick<PaymentRow, 'tenant_id' | 'id'>,
  at: Date,
): Promise<void> {
  const p = new Params();
  await db.query(
    `UPDATE payments SET next_check_at = ${p.add(at)}, check_attempts = greatest(check_attempts - 1, 0)
      WHERE tenant_id = ${p.add(payment.tenant_id)} AND id = ${p.add(payment.id)} AND status = 'submitted'`,
    p.values,
  );
}

/**
 * When the reaper's next question falls due: the earliest `next_check_at` of an unresolved payment, the
 * first entry of payments_unresolved (a claimed payment's is its lease's end). Undefined: none is due
 * ever (nothing unresolved, or only payments the reaper stopped asking about).
 */
export async function nextResolutionDue(db: Queryable): Promise<Date | undefined> {
  const { rows } = await db.query<{ at: Date | null }>(
    `SELECT min(next_check_at) AS at FROM payments WHERE status IN ('submitted', 'unknown')`,
    [],
  );
  return rows[0]?.at ?? undefined;
}

/**
 * Puts an unresolved payment back on the reaper's schedule now, with a fresh backoff (an operator's
 * answer to a parked payment). One row, one statement. Undefined when no unresolved payment has it.
 */
export async function requeueResolution(
  db: Queryable,
  tenantId: string,
  id: string,
  now: Date,
): Promise<PaymentRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<PaymentRow>(
    `UPDATE payments SET next_check_at = ${p.add(now)}, check_attempts = 0, resolution_parked_at = NULL
      WHERE tenant_id = ${p.add(tenantId)} AND id = ${p.add(id)} AND status IN ('submitted', 'unknown')
      RETURNING ${PAYMENT_COLUMNS}`,
    p.values,
  );
  return rows[0];
}

/**
 * A payment found by its id alone (an operator has only that), locked until the transaction ends.
 * Without its tenant the primary key cannot be used: this reads the table, as an admin lookup may.
 */
/** Locks one payment by its primary key, its tenant named (docs/scaling.md: one shard on Citus). */
export async function lockPayment(tx: Queryable, tenantId: string, id: string): Promise<PaymentRow | undefined> {
  const p = new Params();
  const { rows } = await tx.query<PaymentRow>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE tenant_id = ${p.add(tenantId)} AND id = ${p.add(id)} FOR UPDATE`,
    p.values,
  );
  return rows[0];
}

export async function findPaymentById(db: Queryable, id: string): Promise<PaymentRow | undefined> {
  const p = new Params();
  const { rows } = await db.query<PaymentRow>(
    `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE id = ${p.add(id)}`,
    p.values,
  );
  return rows[0];
}
