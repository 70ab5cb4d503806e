// A payment as its tenant and the operator read it: the row with its transition history, or its
// ledger entries; 404 `resource_not_found` when the partition holds no such payment. Reads of the
// primary (a client reads its payment right after the payout wrote it); and the operator's recheck
// of a payment the reaper stopped asking about (services/payment-recheck.ts).
import type { Database } from '../db/database.ts';
import { paymentLedgerRows, type PaymentLedgerRow } from '../db/repositories/ledger.ts';
import { findPayment, listTransitions, type PaymentRow, type TransitionRow } from '../db/repositories/payments.ts';
import type { AuditActor } from '../domain/audit.ts';
import type { Clock } from '../domain/clock.ts';
import { notFound } from '../domain/errors.ts';
import type { Partition } from '../domain/partition.ts';
import { recheckPayment } from './payment-recheck.ts';

export interface PaymentWithHistory {
  payment: PaymentRow;
  transitions: TransitionRow[];
}

export class PaymentReads {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
  ) {}

  /** GET /v1/payments/{id}: the payment of this partition and its transitions. */
  async payment(partition: Partition, id: string): Promise<PaymentWithHistory> {
    const payment = await findPayment(this.db, partition.tenantId, partition.mode, id);
    if (!payment) throw notFound('payment');
    return { payment, transitions: await listTransitions(this.db, partition.tenantId, payment.id) };
  }

  /** The operator's read: the tenant's payment in either mode. */
  async tenantPayment(tenantId: string, id: string): Promise<PaymentWithHistory> {
    const payment =
      (await findPayment(this.db, tenantId, 'test', id)) ?? (await findPayment(this.db, tenantId, 'live', id));
    if (!payment) throw notFound('payment');
    return { payment, transitions: await listTransitions(this.db, tenantId, id) };
  }

  /** GET /v1/payments/{id}/ledger: the payment's ledger entries, oldest first. */
  async ledger(partition: Partition, id: string): Promise<PaymentLedgerRow[]> {
    const payment = await findPayment(this.db, partition.tenantId, partition.mode, id);
    if (!payment) throw notFound('payment');
    return paymentLedgerRows(this.db, partition, payment.id);
  }

  /** Puts a parked `submitted` or `unknown` payment back on the reaper's schedule, audited. */
  recheck(id: string, actor: AuditActor): Promise<PaymentRow> {
    return recheckPayment(this.db, this.clock, id, actor);
  }
}
