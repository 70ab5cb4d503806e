// What a reconciliation run proves and how it reports it, as pure data: the checks, a discrepancy
// (what disagrees with what, with the evidence), and the tally that keeps a run's evidence bounded.
// The checks themselves are in reconciliation-checks.ts; reading the figures is the repositories'.

import { createHash } from 'node:crypto';
import { assert } from './assert.ts';

export const RECONCILIATION_CHECKS = [
  'transaction_balanced',
  'account_balances',
  'in_flight',
  'prefunding',
  'credit_drawn',
  'revenue',
  'payment_entries',
  'outcome_events',
  'limit_usage',
] as const;
export type CheckName = (typeof RECONCILIATION_CHECKS)[number];

/** One line per check: what it proves (the API and the docs say the same). */
export const CHECK_SUMMARIES: Record<CheckName, string> = {
  transaction_balanced: 'every ledger transaction has at least two postings and sums to zero in each asset',
  account_balances: "every account's balance (all its slots) equals the sum of its postings",
  in_flight:
    'the in-flight account equals minus the delivered amounts of the charged payouts not yet resolved (submitted, unknown)',
  prefunding:
    'what the tenant holds (prefunding net of credit drawn) equals fundings − charges + refunds of failures + returns + what the daily closes settled',
  credit_drawn:
    'credit drawn equals the charges to credit − the refunds applied to it − what the closes settled, and every recorded daily close has its ledger entry',
  revenue: 'the revenue account equals minus the fees of the charged payouts that did not fail',
  payment_entries:
    "every payment's ledger entries match its status (none before the rail; payout; + settlement; + failure, netting to zero; + settlement + return), and every entry names an existing payment",
  outcome_events:
    'exactly one outcome event per resolved payment (payment.settled or payment.failed), one payment.reversed per return, none for an unresolved one',
  limit_usage:
    'every limit counter equals the delivered amount and number of the payouts it counts (submitted, unknown, settled) of its Caracas day',
};

type SubjectType = 'ledger_transaction' | 'account' | 'payment' | 'limit_counter' | 'daily_close';

/** A disagreement between two records of the same money, with what identifies it. */
export interface Discrepancy {
  check: CheckName;
  subjectType: SubjectType;
  /** The transaction, payment or counter id, or the account (`BS/in_flight`). */
  subjectId: string;
  /** What of the subject disagrees: an account (`BS/in_flight`), an event type, `entries`, `amount`, `count`. */
  facet: string;
  paymentId: string | null;
  /** The figure the other records imply. */
  expected: string;
  /** The figure stored. */
  found: string;
  /** The evidence: ids and the figures behind the two above. Never a secret, an account number or a phone. */
  detail: Record<string, unknown>;
}

type Verdict = 'pass' | 'fail' | 'not_run';

export interface CheckResult {
  verdict: Verdict;
  /** Every discrepancy found, stored or not. */
  discrepancies: number;
  /** How many of them the run stored (the first ones, up to the bound). */
  stored: number;
}

/**
 * A run's findings: every discrepancy counted, only the first `storedMax` of each check kept, so a run
 * over a ledger broken a million ways stays a bounded write and a bounded answer.
 */
export class DiscrepancyTally {
  private readonly counts = new Map<CheckName, number>();
  private readonly kept: Discrepancy[] = [];
  private readonly keptByCheck = new Map<CheckName, number>();
  private readonly ran = new Set<CheckName>();

  constructor(private readonly storedMax: number) {
    assert(Number.isInteger(storedMax) && storedMax >= 0, 'the stored bound is a non-negative integer');
  }

  /** The check ran to its end (with or without findings). */
  ranCheck(...checks: CheckName[]): void {
    for (const check of checks) this.ran.add(check);
  }

  add(findings: Iterable<Discrepancy>): void {
    for (const d of findings) this.count(d.check, 1, d);
  }

  /** `n` more discrepancies of `check` that were counted elsewhere (a query that returns only the first ones). */
  addUnstored(check: CheckName, n: number): void {
    if (n > 0) this.count(check, n);
  }

  private count(check: CheckName, n: number, d?: Discrepancy): void {
    this.counts.set(check, (this.counts.get(check) ?? 0) + n);
    if (!d) return;
    const kept = this.keptByCheck.get(check) ?? 0;
    if (kept >= this.storedMax) return;
    this.keptByCheck.set(check, kept + 1);
    this.kept.push(d);
  }

  get total(): number {
    let total = 0;
    for (const n of this.counts.values()) total += n;
    return total;
  }

  /** The discrepancies kept, in the order found. */
  stored(): readonly Discrepancy[] {
    return this.kept;
  }

  results(): Record<CheckName, CheckResult> {
    return Object.fromEntries(
      RECONCILIATION_CHECKS.map((check) => {
        const discrepancies = this.counts.get(check) ?? 0;
        const verdict: Verdict = discrepancies > 0 ? 'fail' : this.ran.has(check) ? 'pass' : 'not_run';
        return [check, { verdict, discrepancies, stored: this.keptByCheck.get(check) ?? 0 }];
      }),
    ) as Record<CheckName, CheckResult>;
  }
}

/**
 * What a discrepancy opens in the anomalies table (the operator's review queue). The dedup key names
 * the check, the subject and the two figures: the same disagreement found again by the next run is the
 * same anomaly, and a different one (the figures moved) is a new one.
 */
export interface DiscrepancyAnomaly {
  kind: 'reconciliation_discrepancy';
  tenantId: string;
  mode: 'test' | 'live';
  paymentId: string | null;
  /** What the other records imply, under the facet's name: `{"BS/in_flight": "-5000"}`. */
  ours: Record<string, string>;
  /** What is stored, under the same name. */
  theirs: Record<string, string>;
  raw: Record<string, unknown>;
  dedupKey: string;
}

/** The anomalies table's bound on a dedup key; a longer key is replaced by its digest. */
const ANOMALY_DEDUP_KEY_MAX = 300;

function dedupKeyOf(key: string): string {
  return key.length <= ANOMALY_DEDUP_KEY_MAX
    ? key
    : `reconciliation:sha256:${createHash('sha256').update(key).digest('hex')}`;
}

export function discrepancyAnomalies(
  run: { id: string; tenantId: string; mode: 'test' | 'live' },
  discrepancies: readonly Discrepancy[],
): DiscrepancyAnomaly[] {
  return discrepancies.map((d) => ({
    kind: 'reconciliation_discrepancy',
    tenantId: run.tenantId,
    mode: run.mode,
    paymentId: d.paymentId,
    ours: { [d.facet]: d.expected },
    theirs: { [d.facet]: d.found },
    raw: {
      runId: run.id,
      check: d.check,
      subjectType: d.subjectType,
      subjectId: d.subjectId,
      facet: d.facet,
      evidence: d.detail,
    },
    dedupKey: dedupKeyOf(
      `reconciliation:${run.tenantId}:${run.mode}:${d.check}:${d.subjectType}:${d.subjectId}:${d.facet}:${d.expected}:${d.found}`,
    ),
  }));
}
