// The reconciliation checks as pure functions: each takes figures read from the database (in one
// snapshot, see services/reconciliation.ts) and returns what disagrees. A check compares two records
// of the same money that are written independently — the ledger's postings against its balances, the
// payments' amounts and statuses against the ledger, the payments against their events and the limit
// counters — so a row changed by hand, or a bug in one writer, shows as a disagreement. No I/O.

import type { AccountKind, FundingAccount, LedgerEntryKind } from './ledger.ts';
import { IN_FLIGHT, type PaymentStatus } from './payment-state.ts';
import type { Discrepancy } from './reconciliation.ts';

export interface BookFigures {
  /** Balances by asset and account, every slot of an account summed. */
  balances: ReadonlyArray<{ asset: string; account: AccountKind; balance: bigint }>;
  /** Postings summed by entry kind, asset and account. */
  postings: ReadonlyArray<{ kind: LedgerEntryKind; asset: string; account: AccountKind; amount: bigint }>;
  /** The charged payments (those with a funding account), summed by status, funding account and assets. */
  charged: ReadonlyArray<ChargedGroup>;
  /** Amounts recorded as settled by a scheduled close more often than a daily_close entry settles them. */
  unpostedCloses: ReadonlyArray<{ asset: string; amount: bigint; recorded: number; posted: number; firstDay: string }>;
}

/** @internal Exported for its tests, not used elsewhere. */
export interface ChargedGroup {
  status: PaymentStatus;
  funding: FundingAccount;
  sourceAsset: string;
  payoutAsset: string;
  count: number;
  sourceAmount: bigint;
  payoutAmount: bigint;
  feeAmount: bigint;
}

/** Sums by string key; a figure never named is zero. */
class Sums {
  private readonly map = new Map<string, bigint>();
  add(key: string, amount: bigint): void {
    this.map.set(key, (this.map.get(key) ?? 0n) + amount);
  }
  get(key: string): bigint {
    return this.map.get(key) ?? 0n;
  }
  keys(): string[] {
    return [...this.map.keys()];
  }
}

const accountKey = (asset: string, account: string) => `${asset}/${account}`;

function accountDiscrepancy(
  check: Discrepancy['check'],
  asset: string,
  account: string,
  facet: string,
  expected: bigint,
  found: bigint,
  detail: Record<string, unknown>,
): Discrepancy {
  return {
    check,
    subjectType: 'account',
    subjectId: accountKey(asset, account),
    facet,
    paymentId: null,
    expected: expected.toString(),
    found: found.toString(),
    detail: { asset, account, ...detail },
  };
}

/** Every check that compares whole-book figures, taken in one snapshot. */
export function bookFindings(books: BookFigures): Discrepancy[] {
  const balances = new Sums();
  for (const b of books.balances) balances.add(accountKey(b.asset, b.account), b.balance);
  return [
    ...accountBalanceFindings(books, balances),
    ...inFlightFindings(books, balances),
    ...prefundingFindings(books, balances),
    ...creditFindings(books, balances),
    ...revenueFindings(books, balances),
  ];
}

function accountBalanceFindings(books: BookFigures, balances: Sums): Discrepancy[] {
  const posted = new Sums();
  for (const p of books.postings) posted.add(accountKey(p.asset, p.account), p.amount);
  const keys = new Set([...balances.keys(), ...posted.keys()]);
  const findings: Discrepancy[] = [];
  for (const key of [...keys].sort()) {
    if (balances.get(key) === posted.get(key)) continue;
    const [asset, account] = key.split('/') as [string, string];
    findings.push(
      accountDiscrepancy('account_balances', asset, account, 'balance', posted.get(key), balances.get(key), {
        postingsSum: posted.get(key).toString(),
        balance: balances.get(key).toString(),
      }),
    );
  }
  return findings;
}

function inFlightFindings(books: BookFigures, balances: Sums): Discrepancy[] {
  const owed = new Sums();
  const payouts = new Map<string, number>();
  for (const g of books.charged) {
    if (!IN_FLIGHT.includes(g.status)) continue;
    owed.add(g.payoutAsset, -g.payoutAmount);
    payouts.set(g.payoutAsset, (payouts.get(g.payoutAsset) ?? 0) + g.count);
  }
  const assets = new Set([
    ...owed.keys(),
    ...books.balances.filter((b) => b.account === 'in_flight').map((b) => b.asset),
  ]);
  const findings: Discrepancy[] = [];
  for (const asset of [...assets].sort()) {
    const found = balances.get(accountKey(asset, 'in_flight'));
    if (found === owed.get(asset)) continue;
    findings.push(
      accountDiscrepancy('in_flight', asset, 'in_flight', 'unresolved_payouts', owed.get(asset), found, {
        unresolvedPayouts: payouts.get(asset) ?? 0,
      }),
    );
  }
  return findings;
}

/** Postings of the given entry kinds to the given accounts, summed per asset. */
function postedTo(books: BookFigures, kinds: readonly LedgerEntryKind[], accounts: readonly AccountKind[]): Sums {
  const sums = new Sums();
  for (const p of books.postings)
    if (kinds.includes(p.kind) && accounts.includes(p.account)) sums.add(p.asset, p.amount);
  return sums;
}

function prefundingFindings(books: BookFigures, balances: Sums): Discrepancy[] {
  const fundings = postedTo(books, ['funding'], ['prefunding']);
  const closes = postedTo(books, ['daily_close'], ['prefunding', 'credit_receivable']);
  const charges = new Sums();
  const refunds = new Sums();
  const returns = new Sums();
  for (const g of books.charged) {
    charges.add(g.sourceAsset, g.sourceAmount);
    if (g.status === 'failed') refunds.add(g.sourceAsset, g.sourceAmount);
    if (g.status === 'reversed') returns.add(g.payoutAsset, g.payoutAmount);
  }
  const tenantAccounts = books.balances
    .filter((b) => b.account === 'prefunding' || b.account === 'credit_receivable')
    .map((b) => b.asset);
  const assets = new Set([
    ...fundings.keys(),
    ...closes.keys(),
    ...charges.keys(),
    ...returns.keys(),
    ...tenantAccounts,
  ]);
  const findings: Discrepancy[] = [];
  for (const asset of [...assets].sort()) {
    // Credit-normal: what the tenant holds is the negated balance of its two accounts.
    const held = -(
      balances.get(accountKey(asset, 'prefunding')) + balances.get(accountKey(asset, 'credit_receivable'))
    );
    const parts = {
      fundings: -fundings.get(asset),
      charges: charges.get(asset),
      refunds: refunds.get(asset),
      returns: returns.get(asset),
      closes: -closes.get(asset),
    };
    const expected = parts.fundings - parts.charges + parts.refunds + parts.returns + parts.closes;
    if (held === expected) continue;
    findings.push(
      accountDiscrepancy(
        'prefunding',
        asset,
        'prefunding',
        'position',
        expected,
        held,
        Object.fromEntries(Object.entries(parts).map(([k, v]) => [k, v.toString()])),
      ),
    );
  }
  return findings;
}

function creditFindings(books: BookFigures, balances: Sums): Discrepancy[] {
  const charges = new Sums();
  for (const g of books.charged) if (g.funding === 'credit_receivable') charges.add(g.sourceAsset, g.sourceAmount);
  const refunds = postedTo(books, ['payout_failure', 'payout_reversal'], ['credit_receivable']);
  const closes = postedTo(books, ['daily_close'], ['credit_receivable']);
  const drawnAccounts = books.balances.filter((b) => b.account === 'credit_receivable').map((b) => b.asset);
  const assets = new Set([...charges.keys(), ...refunds.keys(), ...closes.keys(), ...drawnAccounts]);
  const findings: Discrepancy[] = [];
  for (const asset of [...assets].sort()) {
    const drawn = balances.get(accountKey(asset, 'credit_receivable'));
    const expected = charges.get(asset) + refunds.get(asset) + closes.get(asset);
    if (drawn === expected) continue;
    findings.push(
      accountDiscrepancy('credit_drawn', asset, 'credit_receivable', 'drawn', expected, drawn, {
        charges: charges.get(asset).toString(),
        refundsApplied: (-refunds.get(asset)).toString(),
        settledByCloses: (-closes.get(asset)).toString(),
      }),
    );
  }
  for (const close of books.unpostedCloses) {
    findings.push({
      check: 'credit_drawn',
      subjectType: 'daily_close',
      subjectId: `${close.asset}:${close.firstDay}`,
      facet: 'entry',
      paymentId: null,
      expected: String(close.recorded),
      found: String(close.posted),
      detail: {
        asset: close.asset,
        settledAmount: close.amount.toString(),
        firstBusinessDate: close.firstDay,
        recordedCloses: close.recorded,
        closeEntries: close.posted,
      },
    });
  }
  return findings;
}

function revenueFindings(books: BookFigures, balances: Sums): Discrepancy[] {
  const fees = new Sums();
  for (const g of books.charged) if (g.status !== 'failed') fees.add(g.payoutAsset, -g.feeAmount);
  const assets = new Set([
    ...fees.keys(),
    ...books.balances.filter((b) => b.account === 'revenue').map((b) => b.asset),
  ]);
  const findings: Discrepancy[] = [];
  for (const asset of [...assets].sort()) {
    const found = balances.get(accountKey(asset, 'revenue'));
    if (found === fees.get(asset)) continue;
    findings.push(accountDiscrepancy('revenue', asset, 'revenue', 'fees', fees.get(asset), found, {}));
  }
  return findings;
}

// ---------------------------------------------------------------------------------------------------
// Ledger transactions, page by page: each one's postings never change once written.

export interface TransactionCheckRow {
  id: string;
  kind: LedgerEntryKind;
  paymentId: string | null;
  /** A payment of the transaction's tenant and mode has that id. */
  paymentFound: boolean;
  postings: number;
  /** Assets whose postings do not sum to zero, with their sum. */
  unbalanced: ReadonlyArray<{ asset: string; total: bigint }>;
}

export function transactionFindings(rows: readonly TransactionCheckRow[]): Discrepancy[] {
  const findings: Discrepancy[] = [];
  for (const t of rows) {
    const base = { subjectType: 'ledger_transaction' as const, subjectId: t.id, paymentId: t.paymentId };
    const detail = { transactionId: t.id, kind: t.kind, paymentId: t.paymentId };
    if (t.postings < 2)
      findings.push({
        ...base,
        check: 'transaction_balanced',
        facet: 'postings',
        expected: 'at least 2',
        found: String(t.postings),
        detail,
      });
    for (const u of t.unbalanced) {
      findings.push({
        ...base,
        check: 'transaction_balanced',
        facet: u.asset,
        expected: '0',
        found: u.total.toString(),
        detail: { ...detail, asset: u.asset },
      });
    }
    const forAPayment = t.kind.startsWith('payout');
    if (forAPayment && t.paymentId === null) {
      findings.push({
        ...base,
        check: 'payment_entries',
        facet: 'payment',
        expected: 'a payment',
        found: 'none',
        detail,
      });
    } else if (t.paymentId !== null && (!forAPayment || !t.paymentFound)) {
      const expected = forAPayment ? 'an existing payment of this mode' : `no payment (a ${t.kind} entry)`;
      findings.push({ ...base, check: 'payment_entries', facet: 'payment', expected, found: t.paymentId, detail });
    }
  }
  return findings;
}

// ---------------------------------------------------------------------------------------------------
// Payments, page by page: a payment, its entries and its events are read in one snapshot, and are
// always written together, so a payment changing between two pages is never half seen.

export interface PaymentCheckRow {
  id: string;
  status: PaymentStatus;
  funding: FundingAccount | null;
  sourceAsset: string;
  sourceAmount: bigint;
  payoutAsset: string;
  payoutAmount: bigint;
  feeAmount: bigint;
}

export interface PaymentEntryRow {
  id: string;
  kind: LedgerEntryKind;
  postings: ReadonlyArray<{ asset: string; account: AccountKind; amount: bigint }>;
}

export interface PaymentEventRow {
  id: string;
  type: string;
}

const ENTRY_ORDER: readonly LedgerEntryKind[] = ['payout', 'payout_settlement', 'payout_failure', 'payout_reversal'];
const KINDS_OF_STATUS: Partial<Record<PaymentStatus, readonly LedgerEntryKind[]>> = {
  submitted: ['payout'],
  unknown: ['payout'],
  settled: ['payout', 'payout_settlement'],
  failed: ['payout', 'payout_failure'],
  reversed: ['payout', 'payout_settlement', 'payout_reversal'],
};
const EVENT_TYPES = ['payment.settled', 'payment.failed', 'payment.reversed'] as const;
const EVENTS_OF_STATUS: Partial<Record<PaymentStatus, Partial<Record<(typeof EVENT_TYPES)[number], number>>>> = {
  submitted: {},
  unknown: {},
  settled: { 'payment.settled': 1 },
  failed: { 'payment.failed': 1 },
  reversed: { 'payment.settled': 1, 'payment.reversed': 1 },
};

const sortedKinds = (kinds: readonly string[]) =>
  [...kinds]
    .sort(
      (a, b) =>
        ENTRY_ORDER.indexOf(a as LedgerEntryKind) - ENTRY_ORDER.indexOf(b as LedgerEntryKind) ||
        (a < b ? -1 : a > b ? 1 : 0),
    )
    .join(',');

export function paymentFindings(
  payment: PaymentCheckRow,
  entries: readonly PaymentEntryRow[],
  events: readonly PaymentEventRow[],
): Discrepancy[] {
  const base = { subjectType: 'payment' as const, subjectId: payment.id, paymentId: payment.id };
  const kinds = KINDS_OF_STATUS[payment.status];
  if (!kinds) {
    return [
      {
        ...base,
        check: 'payment_entries',
        facet: 'status',
        expected: 'submitted, unknown, settled, failed or reversed',
        found: payment.status,
        detail: { status: payment.status },
      },
    ];
  }
  return [...entryFindings(payment, kinds, entries), ...eventFindings(payment, events)];
}

function entryFindings(
  payment: PaymentCheckRow,
  statusKinds: readonly LedgerEntryKind[],
  entries: readonly PaymentEntryRow[],
): Discrepancy[] {
  const base = {
    check: 'payment_entries' as const,
    subjectType: 'payment' as const,
    subjectId: payment.id,
    paymentId: payment.id,
  };
  const ordered = [...entries].sort((a, b) => ENTRY_ORDER.indexOf(a.kind) - ENTRY_ORDER.indexOf(b.kind));
  const detail = {
    status: payment.status,
    fundingAccount: payment.funding,
    entries: ordered.map((e) => ({ id: e.id, kind: e.kind })),
  };
  // A failure before the rail was never charged: no entry at all.
  const expectedKinds = payment.funding === null && payment.status === 'failed' ? '' : sortedKinds(statusKinds);
  const found = sortedKinds(entries.map((e) => e.kind));
  if (expectedKinds !== found)
    return [{ ...base, facet: 'entries', expected: expectedKinds || 'none', found: found || 'none', detail }];
  if (entries.length === 0) return [];
  if (payment.funding === null)
    return [{ ...base, facet: 'funding_account', expected: 'prefunding or credit_receivable', found: 'none', detail }];
  const expected = expectedNet(payment);
  const net = new Sums();
  for (const e of entries)
    for (const p of e.postings) net.add(accountKey(p.asset, fundingSide(payment.funding, p.account)), p.amount);
  const findings: Discrepancy[] = [];
  for (const key of [...new Set([...expected.keys(), ...net.keys()])].sort()) {
    if (expected.get(key) === net.get(key)) continue;
    findings.push({
      ...base,
      facet: key,
      expected: expected.get(key).toString(),
      found: net.get(key).toString(),
      detail,
    });
  }
  return findings;
}

/**
 * A credit tenant's refund is split between credit drawn and prefunding by what was drawn at that
 * moment (ledger.ts refundPostings); both are the tenant's side, compared together. A prefunded
 * tenant's money only ever moves through prefunding.
 */
function fundingSide(funding: FundingAccount, account: AccountKind): string {
  return funding === 'credit_receivable' && (account === 'prefunding' || account === 'credit_receivable')
    ? 'prefunding+credit_receivable'
    : account;
}

/** What a payment's entries add up to, per account, given its status and its immutable amounts. */
function expectedNet(p: PaymentCheckRow): Sums {
  const sums = new Sums();
  // A failed payment's entries undo each other entirely (the failure mirrors the payout).
  if (p.status === 'failed') return sums;
  const tenant = fundingSide(p.funding!, p.funding!);
  const deliver = p.payoutAmount;
  sums.add(accountKey(p.sourceAsset, tenant), p.sourceAmount);
  if (p.sourceAsset !== p.payoutAsset) {
    sums.add(accountKey(p.sourceAsset, 'fx'), -p.sourceAmount);
    sums.add(accountKey(p.payoutAsset, 'fx'), deliver + p.feeAmount);
  }
  sums.add(accountKey(p.payoutAsset, 'in_flight'), -deliver);
  sums.add(accountKey(p.payoutAsset, 'revenue'), -p.feeAmount);
  if (p.status === 'settled' || p.status === 'reversed') {
    sums.add(accountKey(p.payoutAsset, 'in_flight'), deliver);
    sums.add(accountKey(p.payoutAsset, 'treasury'), -deliver);
  }
  if (p.status === 'reversed') {
    sums.add(accountKey(p.payoutAsset, 'treasury'), deliver);
    sums.add(accountKey(p.payoutAsset, tenant), -deliver);
  }
  return sums;
}

function eventFindings(payment: PaymentCheckRow, events: readonly PaymentEventRow[]): Discrepancy[] {
  const expected = EVENTS_OF_STATUS[payment.status] ?? {};
  const findings: Discrepancy[] = [];
  for (const type of EVENT_TYPES) {
    const found = events.filter((e) => e.type === type);
    const want = expected[type] ?? 0;
    if (found.length === want) continue;
    findings.push({
      check: 'outcome_events',
      subjectType: 'payment',
      subjectId: payment.id,
      facet: type,
      paymentId: payment.id,
      expected: String(want),
      found: String(found.length),
      detail: { status: payment.status, eventType: type, eventIds: found.map((e) => e.id) },
    });
  }
  return findings;
}

// ---------------------------------------------------------------------------------------------------
// Limit counters: the database compares them with the counted payouts (one statement, one snapshot)
// and returns the first that disagree.

export interface CounterMismatch {
  businessDate: string;
  subjectKind: string;
  subjectId: string;
  method: string;
  counted: { amount: bigint; count: bigint };
  stored: { amount: bigint; count: bigint };
}

export function counterFindings(rows: readonly CounterMismatch[]): Discrepancy[] {
  return rows.map((r) => ({
    check: 'limit_usage',
    subjectType: 'limit_counter',
    subjectId: `${r.businessDate}|${r.subjectKind}|${r.subjectId}|${r.method}`,
    facet: 'usage',
    paymentId: null,
    expected: `${r.counted.amount}/${r.counted.count}`,
    found: `${r.stored.amount}/${r.stored.count}`,
    detail: {
      businessDate: r.businessDate,
      subjectKind: r.subjectKind,
      subjectId: r.subjectId,
      method: r.method,
      countedAmount: r.counted.amount.toString(),
      countedPayouts: r.counted.count.toString(),
      storedAmount: r.stored.amount.toString(),
      storedCount: r.stored.count.toString(),
    },
  }));
}
