import { assert, InvariantError } from './assert.ts';
// Ledger entries as pure data. A posting is signed: debit positive, credit negative. Every entry
// balances per asset; `assertBalanced` stops the world otherwise (the database checks it again).

export type AccountKind = 'prefunding' | 'credit_receivable' | 'in_flight' | 'revenue' | 'treasury' | 'fx';
export type LedgerEntryKind =
  'funding' | 'payout' | 'payout_settlement' | 'payout_failure' | 'payout_reversal' | 'daily_close';

/** Where a tenant's payouts are charged: its prefunding balance, or its credit line (daily close). */
export type FundingAccount = 'prefunding' | 'credit_receivable';

export interface Posting {
  asset: string;
  account: AccountKind;
  amount: bigint;
}

export interface LedgerEntry {
  kind: LedgerEntryKind;
  postings: Posting[];
}

export function assertBalanced(entry: LedgerEntry): void {
  const sums = new Map<string, bigint>();
  const seen = new Set<string>();
  for (const posting of entry.postings) {
    if (typeof posting.amount !== 'bigint' || posting.amount === 0n) {
      throw new InvariantError(`${entry.kind} has a zero or non-integer posting`);
    }
    const key = `${posting.asset}/${posting.account}`;
    assert(!seen.has(key), `${entry.kind} posts twice to ${key}`);
    seen.add(key);
    sums.set(posting.asset, (sums.get(posting.asset) ?? 0n) + posting.amount);
  }
  for (const [asset, sum] of sums) {
    assert(sum === 0n, `${entry.kind} is unbalanced in ${asset} by ${sum}`);
  }
  assert(entry.postings.length >= 2, `${entry.kind} needs at least two postings`);
}

function entry(kind: LedgerEntryKind, postings: Posting[]): LedgerEntry {
  const result = { kind, postings: postings.filter((p) => p.amount !== 0n) };
  assertBalanced(result);
  return result;
}

/** Money received from the tenant: our cash grows, and so does what we owe the tenant. */
export function fundingEntry(asset: string, amount: bigint): LedgerEntry {
  return entry('funding', [
    { asset, account: 'treasury', amount },
    { asset, account: 'prefunding', amount: -amount },
  ]);
}

export interface PayoutAmounts {
  funding: FundingAccount;
  sourceAsset: string;
  /** What leaves the source balance: deliver + fee in BS, or the spend amount in another asset. */
  sourceAmount: bigint;
  deliverAmount: bigint;
  feeAmount: bigint;
}

/**
 * The payout commitment: the source is charged, the delivered amount is owed to the rail (in
 * flight) and the fee is revenue. A conversion passes through the FX position in both assets.
 */
export function payoutEntry(a: PayoutAmounts): LedgerEntry {
  const gross = a.deliverAmount + a.feeAmount;
  const bs: Posting[] = [
    { asset: 'BS', account: 'in_flight', amount: -a.deliverAmount },
    { asset: 'BS', account: 'revenue', amount: -a.feeAmount },
  ];
  if (a.sourceAsset === 'BS') {
    assert(a.sourceAmount === gross, 'a BS payout charges exactly deliver + fee');
    return entry('payout', [{ asset: 'BS', account: a.funding, amount: a.sourceAmount }, ...bs]);
  }
  return entry('payout', [
    { asset: a.sourceAsset, account: a.funding, amount: a.sourceAmount },
    { asset: a.sourceAsset, account: 'fx', amount: -a.sourceAmount },
    { asset: 'BS', account: 'fx', amount: gross },
    ...bs,
  ]);
}

/** The rail paid the beneficiary: the in-flight amount leaves our cash. */
export function settlementEntry(deliverAmount: bigint): LedgerEntry {
  return entry('payout_settlement', [
    { asset: 'BS', account: 'in_flight', amount: deliverAmount },
    { asset: 'BS', account: 'treasury', amount: -deliverAmount },
  ]);
}

/**
 * Money given back to a tenant in `asset`: to the account it was charged to. A credit tenant's refund
 * first reduces what it has drawn; whatever exceeds the current draw (a daily close already settled
 * it) is owed to the tenant as prefunding, shown in its position and netted by the next close. So a
 * refund never drives `credit_receivable` below zero, whenever it happens.
 * @internal Exported for its tests, not used elsewhere.
 */
export function refundPostings(funding: FundingAccount, asset: string, amount: bigint, creditDrawn: bigint): Posting[] {
  assert(amount > 0n, 'a refund is positive');
  if (funding === 'prefunding') return [{ asset, account: 'prefunding', amount: -amount }];
  assert(creditDrawn >= 0n, 'credit drawn is never negative');
  const toCredit = creditDrawn < amount ? creditDrawn : amount;
  return [
    { asset, account: 'credit_receivable', amount: -toCredit },
    { asset, account: 'prefunding', amount: -(amount - toCredit) },
  ];
}

/**
 * A rejected payout charges nothing: the mirror of its commitment, with the charge refunded through
 * `refundPostings` (a credit tenant's draw may have been settled by a close meanwhile).
 */
export function failureEntry(payout: LedgerEntry, funding: FundingAccount, creditDrawn: bigint): LedgerEntry {
  assert(payout.kind === 'payout', 'only a payout entry is reversed on failure');
  const charge = payout.postings.find((p) => p.account === funding && p.amount > 0n);
  assert(charge, `the payout entry does not charge ${funding}`);
  return entry('payout_failure', [
    ...payout.postings.filter((p) => p !== charge).map((p) => ({ ...p, amount: -p.amount })),
    ...refundPostings(funding, charge.asset, charge.amount, creditDrawn),
  ]);
}

/**
 * The bank returned a settled payout: the delivered bolivares come back to our cash and to the
 * tenant's position in the delivered asset (the fee is kept), through `refundPostings`.
 */
export function reversalEntry(
  funding: FundingAccount,
  asset: string,
  deliverAmount: bigint,
  creditDrawn: bigint,
): LedgerEntry {
  return entry('payout_reversal', [
    { asset, account: 'treasury', amount: deliverAmount },
    ...refundPostings(funding, asset, deliverAmount, creditDrawn),
  ]);
}

/**
 * Daily close of one asset: the tenant pays what it drew on credit, net of what we owe it (refunds
 * after the previous close, or money it sent on account). The treasury receives the difference, or
 * pays it out when we owe more than was drawn. Undefined when there is nothing to settle.
 */
export function dailyCloseEntry(asset: string, drawn: bigint, owed: bigint): LedgerEntry | undefined {
  assert(drawn >= 0n && owed >= 0n, 'drawn and owed are never negative');
  if (drawn === 0n && owed === 0n) return undefined;
  return entry('daily_close', [
    { asset, account: 'treasury', amount: drawn - owed },
    { asset, account: 'credit_receivable', amount: -drawn },
    { asset, account: 'prefunding', amount: owed },
  ]);
}
