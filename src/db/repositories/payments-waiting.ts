// The rail queue: payouts accepted and charged while no rail could take them (`pending`,
// `awaiting_rail`), claimed by the reaper in arrival order, sent once a rail admits them (pending →
// submitted) or failed past the queue's bound (through the outcome commit).
import { assertTransition } from '../../domain/payment-state.ts';
import type { Queryable } from '../database.ts';
import { PAYMENT_COLUMNS, type PaymentRow } from './payments.ts';

/**
 * The reaper's claim of waiting payments: the oldest first, each leased until `leaseUntil` so another
 * reaper skips it (SKIP LOCKED) and a crashed reaper's claim simply expires. Cross-tenant, as the
 * reaper's other claim.
 */
export async function claimWaitingPayments(tx: Queryable, now: Date, leaseUntil: Date, limit: number): Promise<PaymentRow[]> {
  const { rows } = await tx.query<PaymentRow>(
    `UPDATE payments SET next_check_at = $2
      WHERE (tenant_id, id) IN (
        SELECT tenant_id, id FROM payments
         WHERE status = 'pending' AND next_check_at <= $1
         ORDER BY created_at, id
         LIMIT $3
         FOR UPDATE SKIP LOCKED)
      RETURNING ${PAYMENT_COLUMNS}`,
    [now, leaseUntil, limit],
  );
  return rows.sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || a.id.localeCompare(b.id));
}

/**
 * A rail admits a waiting payment: it becomes `submitted` on `rail`, due for the reaper's send now,
 * with its transition (reason `rail_admitted`), in one statement. One row: its lock is all it takes.
 * Undefined when it is no longer waiting.
 */
export async function admitWaitingPayment(db: Queryable, payment: Pick<PaymentRow, 'tenant_id' | 'id'>, rail: string, message: string, now: Date): Promise<PaymentRow | undefined> {
  assertTransition('pending', 'submitted');
  const { rows } = await db.query<PaymentRow>(
    `WITH admitted AS (
       UPDATE payments SET status = 'submitted', status_reason = NULL, message = $4, rail = $3, next_check_at = $5, check_attempts = 0, updated_at = $5
        WHERE tenant_id = $1 AND id = $2 AND status = 'pending'
        RETURNING ${PAYMENT_COLUMNS}
     ), history AS (
       INSERT INTO payment_transitions (tenant_id, payment_id, from_status, to_status, reason, actor, metadata, created_at)
       SELECT tenant_id, id, 'pending', 'submitted', 'rail_admitted', 'reaper', jsonb_build_object('rail', rail), $5 FROM admitted
     )
     SELECT * FROM admitted`,
    [payment.tenant_id, payment.id, rail, message, now],
  );
  return rows[0];
}

/** When the next waiting payment falls due (undefined: none waits). */
export async function nextWaitingDue(db: Queryable): Promise<Date | undefined> {
  const { rows } = await db.query<{ at: Date | null }>(`SELECT min(next_check_at) AS at FROM payments WHERE status = 'pending'`, []);
  return rows[0]?.at ?? undefined;
}
