// The rail queue: payouts accepted and charged while no rail could take them (`pending`,
// `awaiting_rail`), claimed by the reaper in arrival order, sent once a rail admits them (pending →
// submitted) or failed past the queue's bound (through the outcome commit).
import { assertTransition } from '../../domain/payment-state.ts';
import type { Queryable } from '../database.ts';
import { PAYMENT_COLUMNS, type PaymentRow } from './payments.ts';
import { Params } from './sql-params.ts';

/**
 * The reaper's claim of waiting payments: the oldest first, each leased until `leaseUntil` so another
 * reaper skips it (SKIP LOCKED) and a crashed reaper's claim simply expires. Cross-tenant, as the
 * reaper's other claim.
 */
export async function claimWaitingPayments(
  tx: Queryable,
  now: Date,
  leaseUntil: Date,
  limit: number,
): Promise<PaymentRow[]> {
  const p = new Params();
  const { rows } = await tx.query<PaymentRow>(
    `UPDATE payments SET next_check_at = ${p.add(leaseUntil)}
      WHERE (tenant_id, id) IN (
        SELECT tenant_id, id FROM payments
         WHERE status = 'pending' AND next_check_at <= ${p.add(now)}
         ORDER BY created_at, id
         LIMIT ${p.add(limit)}
         FOR UPDATE SKIP LOCKED)
      RETURNING ${PAYMENT_COLUMNS}`,
    p.values,
  );
  return rows.sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || a.id.localeCompare(b.id));
}

/**
 * A rail admits a waiting payment: it becomes `submitted` on `rail`, due for the reaper's send now,
 * with its transition (reason `rail_admitted`), in one statement. One row: its lock is all it takes.
 * Undefined when it is no longer waiting.
 */
export async function admitWaitingPayment(
  db: Queryable,
  payment: Pick<PaymentRow, 'tenant_id' | 'id'>,
  rail: string,
  message: string,
  now: Date,
): Promise<PaymentRow | undefined> {
  assertTransition('pending', 'submitted');
  const p = new Params();
  const at = p.add(now);
  const { rows } = await db.query<PaymentRow>(
    `WITH admitted AS (
       UPDATE payments SET status = 'submitted', status_reason = NULL, message = ${p.add(message)}, rail = ${p.add(rail)},
              next_check_at = ${at}, check_attempts = 0, updated_at = ${at}
        WHERE tenant_id = ${p.add(payment.tenant_id)} AND id = ${p.add(payment.id)} AND status = 'pending'
        RETURNING ${PAYMENT_COLUMNS}
     ), history AS (
       INSERT INTO payment_transitions (tenant_id, payment_id, from_status, to_status, reason, actor, metadata, created_at)
       SELECT tenant_id, id, 'pending', 'submitted', 'rail_admitted', 'reaper', jsonb_build_object('rail', rail), ${at} FROM admitted
     )
     SELECT * FROM admitted`,
    p.values,
  );
  return rows[0];
}

/** When the next waiting payment falls due (undefined: none waits). */
export async function nextWaitingDue(db: Queryable): Promise<Date | undefined> {
  const { rows } = await db.query<{ at: Date | null }>(
    `SELECT min(next_check_at) AS at FROM payments WHERE status = 'pending'`,
    [],
  );
  return rows[0]?.at ?? undefined;
}
