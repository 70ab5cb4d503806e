import type { Static } from '@sinclair/typebox';
import type { PaymentLedgerRow } from '../../db/repositories/ledger.ts';
import type { PaymentRow, TransitionRow } from '../../db/repositories/payments.ts';
import type { PaymentReads } from '../../services/payment-reads.ts';
import type { StatementColumns } from '../../db/repositories/statement.ts';
import { partitionOf } from '../context.ts';
import { Answer, errorResponses } from '../schemas/common.ts';
import { LedgerEntryView, Payment, PaymentLedger } from '../schemas/payouts.ts';
import { IdParam } from '../schemas/tenant.ts';
import type { App } from '../types.ts';

/** A statement row. */
export function statementRowView(p: StatementColumns) {
  return {
    id: p.id,
    customer_id: p.customer_id,
    beneficiary_id: p.beneficiary_id,
    status: p.status,
    status_reason: p.status_reason,
    source_asset: p.source_asset,
    source_amount: p.source_amount.toString(),
    payout_asset: p.payout_asset,
    payout_amount: p.payout_amount.toString(),
    fee_amount: p.status === 'failed' ? '0' : p.fee_amount.toString(),
    method: p.method,
    bank_reference: p.bank_reference,
    settled_at: p.settled_at ? p.settled_at.toISOString() : null,
    created_at: p.created_at.toISOString(),
    metadata: p.metadata,
    ...(p.batch_id ? { batch_id: p.batch_id } : {}),
  };
}

/** A payment with its history. */
export function paymentView(p: PaymentRow, transitions: TransitionRow[]) {
  return {
    ...statementRowView(p),
    quote_id: p.quote_id,
    compensated: p.compensated,
    updated_at: p.updated_at.toISOString(),
    events: transitions.map((t) => ({
      from_status: t.from_status,
      to_status: t.to_status,
      reason: t.reason,
      actor: t.actor,
      metadata: t.metadata,
      created_at: t.created_at.toISOString(),
    })),
  };
}

/** Rows of postings, one entry per ledger transaction (the rows come grouped, in order). */
function ledgerEntriesView(rows: PaymentLedgerRow[]) {
  const entries: Array<Static<typeof LedgerEntryView>> = [];
  for (const row of rows) {
    let entry = entries.at(-1);
    if (entry?.id !== row.transaction_id) {
      entry = { id: row.transaction_id, kind: row.kind, created_at: row.created_at.toISOString(), postings: [] };
      entries.push(entry);
    }
    entry.postings.push({ asset: row.asset, account: row.account_kind, amount: row.amount.toString() });
  }
  return entries;
}

export async function paymentRoutes(app: App, payments: PaymentReads): Promise<void> {
  getPaymentRoute(app, payments);
  getPaymentLedgerRoute(app, payments);
}

function getPaymentRoute(app: App, payments: PaymentReads): void {
  app.get(
    '/v1/payments/:id',
    {
      config: { scopes: ['payments:read'] },
      schema: {
        tags: ['Payments'],
        operationId: 'getPayment',
        summary: 'Read a payment and its transition history',
        description:
          'The full state of a payment: read it before closing an operation in your books, as the webhook advises.',
        params: IdParam,
        response: {
          200: Answer('The payment and its transition history', Payment),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function getPayment(request) {
      const { payment, transitions } = await payments.payment(partitionOf(request.auth), request.params.id);
      return paymentView(payment, transitions);
    },
  );
}

function getPaymentLedgerRoute(app: App, payments: PaymentReads): void {
  app.get(
    '/v1/payments/:id/ledger',
    {
      config: { scopes: ['payments:read'] },
      schema: {
        tags: ['Payments'],
        operationId: 'getPaymentLedger',
        summary: "Read a payment's ledger entries",
        description:
          'Every double-entry ledger transaction written for this payment, oldest first, with its postings (signed minor units, debit positive): the charge when it was accepted, then the settlement, the charge given back on a failure, or the reversal. A payment that failed before anything was charged has none. Daily closes and fundings belong to no payment and are not listed.',
        params: IdParam,
        response: {
          200: Answer("The payment's ledger entries", PaymentLedger),
          ...errorResponses('resource_not_found'),
        },
      },
    },
    async function getPaymentLedger(request) {
      return { data: ledgerEntriesView(await payments.ledger(partitionOf(request.auth), request.params.id)) };
    },
  );
}
