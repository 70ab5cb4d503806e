// An operator putting an unresolved payment back on the reaper's schedule (a parked payment, one the
// rail has news of): the change and its audit row in one transaction. The payment is locked first
// (step 3 of the lock order, db/commit/README.md, and nothing else), so `before` is what it replaced.
import type { Database } from '../db/database.ts';
import { recordAudit } from '../db/repositories/audit.ts';
import { findPaymentById, lockPayment, requeueResolution, type PaymentRow } from '../db/repositories/payments.ts';
import type { AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import { UNRESOLVED } from '../domain/payment-state.ts';
import { ApiError, notFound } from '../domain/errors.ts';
import { assert } from '../domain/assert.ts';

export async function recheckPayment(db: Database, clock: Clock, id: string, actor: AuditActor): Promise<PaymentRow> {
  // The operator names the payment only: its tenant (which never changes) is read first, so that the
  // transaction's statements each name it (docs/scaling.md).
  const found = await findPaymentById(db, id);
  if (!found) throw notFound('payment');
  return db.transaction(async (tx) => {
    const payment = await lockPayment(tx, found.tenant_id, id);
    if (!payment) throw notFound('payment');
    if (!UNRESOLVED.includes(payment.status)) {
      throw new ApiError(
        'payment_already_resolved',
        `This payment is already ${payment.status}: there is nothing to ask the rail.`,
        { status: payment.status },
      );
    }
    const row = await requeueResolution(tx, payment.tenant_id, id, clock.now());
    assert(row, `payment ${id}, locked and unresolved, was not requeued`);
    await recordAudit(tx, {
      actor,
      action: 'payment.recheck',
      target: { type: 'payment', id, tenantId: payment.tenant_id, mode: payment.mode },
      before: scheduleOf(payment),
      after: scheduleOf(row),
    });
    return row;
  });
}

const scheduleOf = (p: PaymentRow) => ({
  status: p.status,
  nextCheckAt: p.next_check_at,
  checkAttempts: p.check_attempts,
  resolutionParkedAt: p.resolution_parked_at,
});
