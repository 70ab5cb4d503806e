// Ledger entries as pure data. A posting is signed: debit positive, credit negative. Every entry
// balances per asset; `assertBalanced` stops the world otherwise (the database checks it again).

export type AccountKind = 'prefunding' | 'credit_receivable' | 'in_flight' | 'revenue' | 'treasury' | 'fx';
export type LedgerEntryKind = 'funding' | 'payout' | 'payout_settlement' | 'payout_failure' | 'payout_reversal' | 'daily_close';

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
      throw new Error(`invariant: ${entry.kind} has a zero or non-integer posting`);
    }
    const key = `${posting.asset}/${posting.account}`;
    if (seen.has(key)) throw new Error(`invariant: ${entry.kind} posts twice to ${key}`);
    seen.add(key);
    sums.set(posting.asset, (sums.get(posting.asset) ?? 0n) + posting.amount);
  }
  for (const [asset, sum] of sums) {
    if (sum !== 0n) throw new Error(`invariant: ${entry.kind} is unbalanced in ${asset} by ${sum}`);
  }
  if (entry.postings.length < 2) throw new Error(`invariant: ${entry.kind} needs at least two postings`);
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
    if (a.sourceAmount !== gross) throw new Error('invariant: a BS payout charges exactly deliver + fee');
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

/** A rejected payout charges nothing: the exact mirror of its commitment. */
export function failureEntry(payout: LedgerEntry): LedgerEntry {
  if (payout.kind !== 'payout') throw new Error('invariant: only a payout entry is reversed on failure');
  return entry(
    'payout_failure',
    payout.postings.map((p) => ({ ...p, amount: -p.amount })),
  );
}

/**
 * The bank returned a settled payout: the delivered amount comes back to our cash and to the
 * tenant (fee kept). For a credit tenant it first reduces what is drawn; any excess (drawn was
 * already settled by a close) is owed to the tenant as prefunding.
 */
export function reversalEntry(funding: FundingAccount, deliverAmount: bigint, creditDrawn: bigint): LedgerEntry {
  const toCredit = funding === 'credit_receivable' ? (creditDrawn < deliverAmount ? creditDrawn : deliverAmount) : 0n;
  return entry('payout_reversal', [
    { asset: 'BS', account: 'treasury', amount: deliverAmount },
    { asset: 'BS', account: 'credit_receivable', amount: -toCredit },
    { asset: 'BS', account: 'prefunding', amount: -(deliverAmount - toCredit) },
  ]);
}

/** Daily close: the tenant pays what it drew on credit. */
export function dailyCloseEntry(asset: string, drawn: bigint): LedgerEntry {
  return entry('daily_close', [
    { asset, account: 'treasury', amount: drawn },
    { asset, account: 'credit_receivable', amount: -drawn },
  ]);
}
