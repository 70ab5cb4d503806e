// Sending a committed payout to its rail, as the payout path does right after its batch and the reaper
// does when that send never happened: by our reference (the payment id), with a hard timeout.
import type { PaymentRow } from '../db/repositories/payments.ts';
import type { RailReport } from '../domain/commit/outcome-decision.ts';
import type { Sender } from '../domain/sender.ts';
import { isRailFailure, RailNotReceivedError, type RailAdapter, type RailTransfer } from './rail.ts';
import { assert } from '../domain/assert.ts';

/** Which rail serves each mode, when a caller has one rail per mode (tests of one rail). */
export type RailsByMode = { test: RailAdapter; live?: RailAdapter };

/**
 * The one send outcome that is not a rail report: the rail provably did not receive the transfer
 * (RailNotReceivedError). Nothing is recorded for it; the transfer may go to another rail.
 */
export type NotReceived = { status: 'not_received'; message: string };

/**
 * A send that failed, or was still waiting, in the service's own database when it ended, not at the
 * rail (ServiceDatabaseError): its fate is unknown as after any error or timeout (it is one to the
 * outcome commits), but the rail's circuit breaker does not count it.
 */
type DatabaseFailed = { status: 'error'; message: string; database: true } | { status: 'timeout'; database: true };

/** What a send ended in: the rail's report, a provable non-receipt, or our database failing under it. */
export type SendOutcome = RailReport | NotReceived | DatabaseFailed;

/** Asks the rail to send, with a hard timeout; never throws (a timeout or error is an outcome). */
export async function callRail(rail: RailAdapter, transfer: RailTransfer, timeoutMs: number): Promise<SendOutcome> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<RailReport>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      // After the abort's own consequences: an adapter that gives up then says why first (the
      // sandbox: its statement on our database had not answered).
      setImmediate(() => resolve({ status: 'timeout' }));
    }, timeoutMs);
  });
  try {
    return await Promise.race([rail.submit(transfer, controller.signal), timeout]);
  } catch (error) {
    if (error instanceof RailNotReceivedError && !controller.signal.aborted)
      return { status: 'not_received', message: error.message };
    // We cannot know whether the rail got it: unknown, resolved later by asking with our reference.
    if (controller.signal.aborted)
      return isRailFailure(error) ? { status: 'timeout' } : { status: 'timeout', database: true };
    const message = (error as Error).message;
    return isRailFailure(error) ? { status: 'error', message } : { status: 'error', message, database: true };
  } finally {
    clearTimeout(timer);
  }
}

/** What the rail is asked to send for a payment (by our reference, the payment id). */
export function transferOf(payment: PaymentRow, sender: Sender | Record<string, string>): RailTransfer {
  assert(payment.method, `payment ${payment.id} reached the rail without an instrument`);
  const b = payment.beneficiary;
  return {
    reference: payment.id,
    tenantId: payment.tenant_id,
    mode: payment.mode,
    instrument: payment.method,
    amountMinor: payment.payout_amount,
    asset: 'BS',
    beneficiary: {
      fullName: b.fullName,
      nationalId: b.nationalId,
      bankCode: b.bankCode,
      accountNumber: b.accountNumber,
      phone: b.phone,
    },
    sender: sender as RailTransfer['sender'],
  };
}
