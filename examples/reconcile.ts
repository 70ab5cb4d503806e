// The day's reconciliation in TypeScript with @bolivar/sdk: every settled payment of a Caracas day,
// totalled exactly (bigint), the same statement as CSV, and errors handled by their stable code.
// Compiled under `tsc --strict` by the test suite (test/integration/sdk-examples.test.ts).
import { Bolivar, BolivarError, type ErrorCode, type StatementRow, type WebhookEvent } from '@bolivar/sdk';

export interface DayTotals {
  payments: number;
  delivered: bigint;
  fees: bigint;
  csv: string;
}

export async function reconcileDay(client: Bolivar, day: string): Promise<DayTotals> {
  const totals: DayTotals = { payments: 0, delivered: 0n, fees: 0n, csv: '' };
  const rows: StatementRow[] = [];
  for await (const row of client.payments.list({ from: day, to: day, status: 'settled', limit: 100 })) rows.push(row);
  for (const row of rows) {
    totals.payments += 1;
    totals.delivered += BigInt(row.payout_amount); // amounts arrive as decimal strings: exact in bigint
    totals.fees += BigInt(row.fee_amount);
  }
  totals.csv = await client.payments.exportCsv({ from: day, to: day, status: 'settled' });
  return totals;
}

/** What to do after a failed call: branch on `code`, never on the message. */
export function nextStep(error: unknown): 'retry later' | 'fix the request' | 'new quote' | 'call support' {
  if (!(error instanceof BolivarError)) return 'call support';
  const code: ErrorCode | 'unexpected_response' = error.code;
  switch (code) {
    case 'rate_limited':
    case 'service_unavailable':
    case 'overloaded':
    case 'rate_unavailable':
      return 'retry later'; // the SDK already retried maxRetries times, with the same Idempotency-Key
    case 'quote_expired':
    case 'quote_already_consumed':
      return 'new quote';
    case 'validation_failed':
      return 'fix the request'; // error.meta?.errors names every invalid field
    default:
      return 'call support'; // quote error.requestId
  }
}

/** A webhook event narrowed by its type. */
export function describeEvent(event: WebhookEvent): string {
  switch (event.eventType) {
    case 'payment.settled':
      return `${event.payload.paymentId} settled, bank reference ${event.payload.bankReference}`;
    case 'payment.failed':
      return `${event.payload.paymentId} failed: ${event.payload.reason}`;
    case 'payment.reversed':
      return `${event.payload.paymentId} reversed: ${event.payload.reason}`;
  }
}

export const example = async (): Promise<void> => {
  const client = new Bolivar({
    apiKey: process.env.BOLIVAR_API_KEY ?? '',
    baseUrl: process.env.BOLIVAR_BASE_URL ?? 'http://localhost:3000',
  });
  const totals = await reconcileDay(client, new Date().toISOString().slice(0, 10));
  console.log(`${totals.payments} payments, ${totals.delivered} delivered, ${totals.fees} fees (BS minor units)`);
};
