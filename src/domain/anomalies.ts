// Anomalies: a rail report that contradicts our records, judged as a pure function. Our records never
// change on a contradiction: the outcome decision records it instead (and the rail is acknowledged
// only once it is stored), for an operator to look at — money may have moved contrary to the ledger.
// No I/O.
import { createHash } from 'node:crypto';
import type { PaymentStatus } from './payment-state.ts';

export const ANOMALY_KINDS = [
  'settled_after_failed',
  'failed_after_settled',
  'return_of_failed',
  'return_of_unresolved',
  'unknown_reference',
  'amount_mismatch',
  'bank_reference_mismatch',
  'reconciliation_discrepancy',
  'statement_unknown_reference',
  'statement_missing_at_rail',
  'statement_amount_mismatch',
  'statement_status_mismatch',
  'statement_bank_reference_mismatch',
  'reference_mismatch',
  'unreadable_answer',
  'implausible_settled_at',
  'resend_exhausted',
  'statement_pull_failed',
] as const;
export type AnomalyKind = (typeof ANOMALY_KINDS)[number];

export const ANOMALY_STATUSES = ['open', 'resolved'] as const;
export type AnomalyStatus = (typeof ANOMALY_STATUSES)[number];

/** One line per kind: what happened. The API's descriptions and the console show these. */
export const ANOMALY_KIND_MEANINGS: Readonly<Record<AnomalyKind, string>> = {
  settled_after_failed:
    'the rail reports settled a payment we recorded as failed (its charge was returned to the tenant)',
  failed_after_settled: 'the rail reports failed a payment we recorded as settled or reversed',
  return_of_failed: 'the rail reports a return of a payment we recorded as failed',
  return_of_unresolved:
    'the rail notifies a return of a payment we hold as submitted or unknown, and its own status shows no settlement',
  unknown_reference: 'a rail notification names a reference we have no payment for',
  amount_mismatch: "the rail reports an amount other than the payment's",
  bank_reference_mismatch: 'the rail reports a bank reference other than the one the payment settled with',
  reconciliation_discrepancy: 'a reconciliation run found two figures that disagree',
  statement_unknown_reference: "a line of a rail's statement names a reference that is no payment of that rail",
  statement_missing_at_rail:
    "a payment of ours settled on the statement's day through that rail is not in the rail's statement",
  statement_amount_mismatch: "a rail's statement gives a payment an amount other than ours",
  statement_status_mismatch: "a rail's statement gives a payment a status ours does not agree with",
  statement_bank_reference_mismatch:
    "a rail's statement gives a payment a bank reference other than the one it settled with",
  reference_mismatch:
    'the rail answered a question about a payment with a transfer of another reference (not applied; the payment is asked about again)',
  unreadable_answer:
    'the rail gave a payment an amount or bank reference we cannot read (not applied; the payment is asked about again)',
  implausible_settled_at:
    "the rail's settlement time is in the future or before we sent the transfer (the payment settled at our own time)",
  resend_exhausted:
    'the rail still does not have a transfer we sent it again as often as we do: a person must find out what happened to it',
  statement_pull_failed:
    "the day's statement could not be pulled from the rail, or could not be read, at every attempt: that day is not checked against the bank until a person posts it",
};

/** What one side says, as JSON: amounts as decimal strings of minor units. */
export type Evidence = Record<string, string | null>;

/** A report that contradicts our record of a payment: its kind and both sides. */
export interface Contradiction {
  kind: AnomalyKind;
  ours: Evidence;
  theirs: Evidence;
}

/** What the rail said happened to a transfer (the final reports only). */
export type FinalReport =
  | { status: 'settled'; bankReference: string; amountMinor?: bigint }
  | { status: 'failed'; reason: string; amountMinor?: bigint }
  | { status: 'reversed'; bankReference?: string; reason: string; amountMinor?: bigint };

/** The facts of a payment a report is judged against. */
export interface PaymentRecord {
  status: PaymentStatus;
  status_reason: string | null;
  payout_asset: string;
  payout_amount: bigint;
  bank_reference: string | null;
}

const UNRESOLVED: readonly PaymentStatus[] = ['submitted', 'unknown'];

/**
 * Whether `report` contradicts our record of `payment`, and how. The status comes first (settled
 * after failed, failed after settled, a return of a failed payment, and — for a notification, which
 * the reaper only applies after asking the rail for its status — a return of a payment we never saw
 * settle); then the amount and the bank reference, each compared only when both sides have one. A
 * report that agrees, or only repeats what we recorded, is no contradiction.
 */
export function contradictionOf(
  payment: PaymentRecord,
  report: FinalReport,
  notified: boolean,
): Contradiction | undefined {
  const kind = statusContradiction(payment.status, report.status, notified) ?? detailContradiction(payment, report);
  return kind === undefined ? undefined : { kind, ours: evidenceOfPayment(payment), theirs: evidenceOfReport(report) };
}

function statusContradiction(
  ours: PaymentStatus,
  theirs: FinalReport['status'],
  notified: boolean,
): AnomalyKind | undefined {
  switch (theirs) {
    case 'settled':
      return ours === 'failed' ? 'settled_after_failed' : undefined;
    case 'failed':
      return ours === 'settled' || ours === 'reversed' ? 'failed_after_settled' : undefined;
    case 'reversed':
      if (ours === 'failed') return 'return_of_failed';
      return notified && UNRESOLVED.includes(ours) ? 'return_of_unresolved' : undefined;
  }
}

function detailContradiction(payment: PaymentRecord, report: FinalReport): AnomalyKind | undefined {
  if (report.amountMinor !== undefined && report.amountMinor !== payment.payout_amount) return 'amount_mismatch';
  const theirs = report.status === 'failed' ? undefined : report.bankReference;
  if (theirs !== undefined && payment.bank_reference !== null && theirs !== payment.bank_reference)
    return 'bank_reference_mismatch';
  return undefined;
}

export function evidenceOfPayment(payment: PaymentRecord): Evidence {
  return {
    status: payment.status,
    statusReason: payment.status_reason,
    asset: payment.payout_asset,
    amount: payment.payout_amount.toString(),
    bankReference: payment.bank_reference,
  };
}

export function evidenceOfReport(report: FinalReport): Evidence {
  return {
    status: report.status,
    amount: report.amountMinor === undefined ? null : report.amountMinor.toString(),
    bankReference: report.status === 'failed' ? null : (report.bankReference ?? null),
    reason: report.status === 'settled' ? null : report.reason,
  };
}

/** The longest dedup key the anomalies table takes. */
export const DEDUP_KEY_LENGTH_MAX = 300;

const digest = (parts: readonly unknown[]) => createHash('sha256').update(JSON.stringify(parts)).digest('hex');

/**
 * The dedup key of a contradiction heard in a rail notification: one anomaly per notification, however
 * often the rail hands it out (it is acknowledged only once the anomaly is stored).
 */
export function notificationDedupKey(kind: AnomalyKind, mode: string, notificationId: string): string {
  return `${kind}:notification:${digest([mode, notificationId])}`;
}

/**
 * The dedup key of a contradiction heard in an answer of the rail (to a send, to a question): one
 * anomaly per payment and distinct thing said, however often the rail is asked and answers the same.
 */
export function answerDedupKey(kind: AnomalyKind, tenantId: string, paymentId: string, theirs: Evidence): string {
  return `${kind}:answer:${digest([tenantId, paymentId, Object.entries(theirs)])}`;
}

/** A value as JSON can carry it: bigints as decimal strings, dates as ISO strings (for `raw`). */
export function jsonOf(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(jsonOf);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => [k, jsonOf(v)]),
    );
  }
  return value;
}
