// The decision of a payout commit, as a pure function: given what the commit locked (the keys, the
// quotes, the day's limit counters, the balances) and the commit's payouts in arrival order, decide
// each payout — accepted, failed before the rail with a reason, refused with an HTTP error, or
// answered from what its Idempotency-Key already names — and the ledger postings and limit usage
// of the accepted ones. Every rule of the order of checks lives here; the committer only locks,
// calls this, and writes what it says. No I/O.
//
// The order of checks for one payout: its key (replay, in progress, reused) → its quote (consumed,
// expired) → instrument cap and configured limit rule → funds or credit → the business outcome
// (a failure before the rail, or accepted). An HTTP refusal consumes nothing: no quote, no limit,
// no balance. Payouts are decided one after another against running totals, so payouts of one commit
// can never jointly pass a limit or a balance.

import type { StoredKey } from '../idempotency.ts';
import {
  accountKeyOf,
  counterKeyOf,
  sortedValues,
  trackedCounters,
  type AccountRef,
  type CounterKey,
  type CounterKind,
} from './keys.ts';
import { instrumentCapBreach, type LimitBreach } from '../instrument-caps.ts';
import { assertBalanced, payoutEntry, type AccountKind, type FundingAccount, type LedgerEntry } from '../ledger.ts';
import { countedSubject, ruleBreach, winningRule, type LimitRule, type LimitTarget } from '../limit-rules.ts';
import { INSTRUMENTS, type Instrument } from '../instrument.ts';
import { assert, InvariantError } from '../assert.ts';

const FUNDINGS: readonly FundingAccount[] = ['prefunding', 'credit_receivable'];

/** A payout as the commit receives it: everything decided before the commit, nothing written. */
export interface PayoutCandidate {
  key: string;
  fingerprint: string;
  paymentId: string;
  quoteId: string;
  /** What the quote charges (asset and amount, fee included). */
  spend: { asset: string; amount: bigint };
  /** What the beneficiary receives, in BS minor units. */
  deliverAmount: bigint;
  feeAmount: bigint;
  /** The instrument the payout goes through; the requested one when routing failed. */
  method: Instrument;
  /** A failure found before the commit: routing (no_route, beneficiary_missing_phone, …). */
  routeFailure: string | null;
  senderMissing: boolean;
  customerId: string | null;
  beneficiaryId: string;
}

export type KeyLock = { owned: true } | { owned: false; stored: StoredKey };
export type QuoteLock = 'open' | 'consumed' | 'expired' | 'missing';

export interface PayoutCommitState {
  tenantId: string;
  now: Date;
  /** The Caracas business day of `now`: whose counters are locked and consumed. */
  day: string;
  /** Where this tenant's payouts are charged. */
  funding: FundingAccount;
  /** The credit ceiling of an asset (null: none). */
  creditLimitOf: (asset: string) => bigint | null;
  /** The rail floor at the current USD rate, in BS minor units. */
  floorMinor: bigint;
  rules: readonly LimitRule[];
  keys: ReadonlyMap<string, KeyLock>;
  quotes: ReadonlyMap<string, QuoteLock>;
  /** Today's counters, as locked (a missing one is zero). */
  counters: ReadonlyMap<string, { amount: bigint; count: bigint }>;
  /** This month's consumption before today, by counter. */
  pastMonth: ReadonlyMap<string, bigint>;
  /** Locked balances, by account key (a missing account is zero). */
  balances: ReadonlyMap<string, bigint>;
}

type FundsRefusal =
  | { funding: 'prefunding'; asset: string; required: bigint; available: bigint }
  | { funding: 'credit_receivable'; asset: string; required: bigint; creditDrawn: bigint; creditLimit: bigint };

export type PayoutRefusal =
  | { code: 'quote_already_consumed' }
  | { code: 'quote_expired' }
  | { code: 'quote_missing' }
  | { code: 'limit_exceeded'; breach: LimitBreach }
  | { code: 'insufficient_tenant_funds'; funds: FundsRefusal };

/** @internal Exported for its tests, not used elsewhere. */
export type PayoutDecision =
  /** Money moves: the entry is posted, the limits consumed, the payout goes to the rail. */
  | { kind: 'accept'; entry: LedgerEntry }
  /** Recorded as failed with this reason; nothing charged, nothing consumed but the quote. */
  | { kind: 'fail'; reason: string; floorMinor?: bigint }
  /** An HTTP error: nothing is consumed (the quote stays open). */
  | { kind: 'refuse'; refusal: PayoutRefusal }
  /** Another request's key: answer from what it stored. */
  | { kind: 'key_taken'; stored: StoredKey }
  /** An earlier payout of this commit holds the same key: same request (in progress) or not (reused). */
  | { kind: 'duplicate'; sameRequest: boolean };

export interface PayoutCommitDecision {
  /** One per candidate, in the candidates' order. */
  decisions: PayoutDecision[];
  /** Net change of each locked account. */
  accountDeltas: Map<string, { account: AccountRef; delta: bigint }>;
  /** Increments of today's counters, by counter key. */
  usage: Map<string, { counter: CounterKey; amount: bigint; count: bigint }>;
}

/**
 * The entry a candidate would post if accepted.
 * @internal Exported for its tests, not used elsewhere.
 */
export function candidateEntry(candidate: PayoutCandidate, funding: FundingAccount): LedgerEntry {
  return payoutEntry({
    funding,
    sourceAsset: candidate.spend.asset,
    sourceAmount: candidate.spend.amount,
    deliverAmount: candidate.deliverAmount,
    feeAmount: candidate.feeAmount,
  });
}

const targetOf = (tenantId: string, c: Pick<PayoutCandidate, 'customerId' | 'beneficiaryId'>): LimitTarget => ({
  tenantId,
  customerId: c.customerId,
  beneficiaryId: c.beneficiaryId,
});

/** The counters the winning rule measures a payout against (none without a rule). */
function measuredCounters(rule: LimitRule | undefined, target: LimitTarget, method: Instrument): CounterKey[] {
  if (!rule) return [];
  const counted = countedSubject(rule, target);
  return (rule.method === '*' ? INSTRUMENTS : [method]).map((m) => ({
    kind: counted.kind,
    subjectId: counted.id,
    method: m,
  }));
}

/**
 * What a commit must lock before deciding: counters and accounts, each list sorted by its key. The
 * accounts of both ways of funding are locked, because which one applies is read (from the tenant)
 * in the same statement that takes the locks.
 */
export function lockPlanOf(
  tenantId: string,
  rules: readonly LimitRule[],
  candidates: readonly PayoutCandidate[],
): { counters: CounterKey[]; accounts: AccountRef[]; monthly: Array<{ kind: CounterKind; subjectId: string }> } {
  const counters = new Map<string, CounterKey>();
  const accounts = new Map<string, AccountRef>();
  const monthly = new Map<string, { kind: CounterKind; subjectId: string }>();
  for (const c of candidates) {
    const target = targetOf(tenantId, c);
    const rule = winningRule(rules, target, c.method);
    for (const k of [...trackedCounters(tenantId, c), ...measuredCounters(rule, target, c.method)])
      counters.set(counterKeyOf(k), k);
    if (rule && rule.monthlyMax !== null) {
      const counted = countedSubject(rule, target);
      monthly.set(`${counted.kind}|${counted.id}`, { kind: counted.kind, subjectId: counted.id });
    }
    for (const funding of FUNDINGS) {
      for (const p of candidateEntry(c, funding).postings)
        accounts.set(accountKeyOf({ asset: p.asset, kind: p.account }), { asset: p.asset, kind: p.account });
    }
  }
  return { counters: sortedValues(counters), accounts: sortedValues(accounts), monthly: sortedValues(monthly) };
}

/**
 * Decides every payout of a commit, in order. Throws only on a programmer error (an invariant), never
 * for a business outcome.
 */
export function decidePayoutCommit(
  state: PayoutCommitState,
  candidates: readonly PayoutCandidate[],
): PayoutCommitDecision {
  const counters = new Map<string, { amount: bigint; count: bigint }>(state.counters);
  const balances = new Map<string, bigint>(state.balances);
  const usage = new Map<string, { counter: CounterKey; amount: bigint; count: bigint }>();
  const keysSeen = new Map<string, string>();
  const quotesClaimed = new Set<string>();

  const decisions = candidates.map((c): PayoutDecision => {
    // 1. The key: the first payout of the commit with it is the one that runs.
    const earlier = keysSeen.get(c.key);
    if (earlier !== undefined) return { kind: 'duplicate', sameRequest: earlier === c.fingerprint };
    keysSeen.set(c.key, c.fingerprint);
    const key = state.keys.get(c.key);
    assert(key, `key of payout ${c.paymentId} was not locked`);
    if (!key.owned) return { kind: 'key_taken', stored: key.stored };

    // 2. The quote: open and unexpired, and not claimed by an earlier payout of this commit.
    const quote = state.quotes.get(c.quoteId);
    assert(quote !== undefined, `quote of payout ${c.paymentId} was not locked`);
    if (quote === 'missing') return { kind: 'refuse', refusal: { code: 'quote_missing' } };
    if (quote === 'consumed' || quotesClaimed.has(c.quoteId))
      return { kind: 'refuse', refusal: { code: 'quote_already_consumed' } };
    if (quote === 'expired') return { kind: 'refuse', refusal: { code: 'quote_expired' } };

    // 3. Instrument cap and the winning limit rule, against what is consumed so far.
    const breach = limitBreach(state, counters, c);
    if (breach) return { kind: 'refuse', refusal: { code: 'limit_exceeded', breach } };

    // 4. Funds or credit.
    const entry = candidateEntry(c, state.funding);
    const funds = fundsRefusal(state, balances, entry);
    if (funds) return { kind: 'refuse', refusal: { code: 'insufficient_tenant_funds', funds } };

    // 5. The business outcome. The quote is consumed either way.
    quotesClaimed.add(c.quoteId);
    if (c.routeFailure) return { kind: 'fail', reason: c.routeFailure };
    if (c.deliverAmount < state.floorMinor)
      return { kind: 'fail', reason: 'amount_below_rail_minimum', floorMinor: state.floorMinor };
    if (c.senderMissing) return { kind: 'fail', reason: 'sender_required' };

    assertBalanced(entry);
    for (const p of entry.postings) {
      const k = accountKeyOf({ asset: p.asset, kind: p.account });
      balances.set(k, (balances.get(k) ?? 0n) + p.amount);
    }
    for (const counter of trackedCounters(state.tenantId, c)) {
      const k = counterKeyOf(counter);
      const now = counters.get(k) ?? { amount: 0n, count: 0n };
      counters.set(k, { amount: now.amount + c.deliverAmount, count: now.count + 1n });
      const inc = usage.get(k) ?? { counter, amount: 0n, count: 0n };
      usage.set(k, { counter, amount: inc.amount + c.deliverAmount, count: inc.count + 1n });
    }
    return { kind: 'accept', entry };
  });

  const accountDeltas = new Map<string, { account: AccountRef; delta: bigint }>();
  for (const [k, balance] of balances) {
    const delta = balance - (state.balances.get(k) ?? 0n);
    if (delta === 0n) continue;
    const [asset, kind] = k.split('/') as [string, AccountKind];
    accountDeltas.set(k, { account: { asset, kind }, delta });
  }
  assertCommitInvariants(state, candidates, decisions, balances);
  return { decisions, accountDeltas, usage };
}

function limitBreach(
  state: PayoutCommitState,
  counters: ReadonlyMap<string, { amount: bigint; count: bigint }>,
  c: PayoutCandidate,
): LimitBreach | undefined {
  const cap = instrumentCapBreach(c.method, c.deliverAmount);
  if (cap) return cap;
  const target = targetOf(state.tenantId, c);
  const rule = winningRule(state.rules, target, c.method);
  if (!rule) return undefined;
  let dayAmount = 0n;
  let dayCount = 0n;
  let monthAmount = 0n;
  for (const counter of measuredCounters(rule, target, c.method)) {
    const k = counterKeyOf(counter);
    const today = counters.get(k) ?? { amount: 0n, count: 0n };
    dayAmount += today.amount;
    dayCount += today.count;
    monthAmount += today.amount + (state.pastMonth.get(k) ?? 0n);
  }
  return ruleBreach(rule, { dayAmount, dayCount, monthAmount }, c.deliverAmount);
}

function fundsRefusal(
  state: PayoutCommitState,
  balances: ReadonlyMap<string, bigint>,
  entry: LedgerEntry,
): FundsRefusal | undefined {
  const charge = entry.postings.find((p) => p.account === state.funding && p.amount > 0n);
  assert(charge, 'a payout entry charges its funding account');
  const balance = balances.get(accountKeyOf({ asset: charge.asset, kind: charge.account })) ?? 0n;
  if (state.funding === 'prefunding') {
    // Prefunding is credit-normal: what the tenant has is the negated balance.
    if (balance + charge.amount <= 0n) return undefined;
    return {
      funding: 'prefunding',
      asset: charge.asset,
      required: charge.amount,
      available: -balance > 0n ? -balance : 0n,
    };
  }
  const limit = state.creditLimitOf(charge.asset);
  if (limit === null || balance + charge.amount <= limit) return undefined;
  return {
    funding: 'credit_receivable',
    asset: charge.asset,
    required: charge.amount,
    creditDrawn: balance,
    creditLimit: limit,
  };
}

/** Stops the world if the decisions break what the checks promise (a bug here, not bad input). */
function assertCommitInvariants(
  state: PayoutCommitState,
  candidates: readonly PayoutCandidate[],
  decisions: readonly PayoutDecision[],
  balances: ReadonlyMap<string, bigint>,
): void {
  assert(decisions.length === candidates.length, 'one decision per payout');
  for (const [k, balance] of balances) {
    const [asset, kind] = k.split('/') as [string, AccountKind];
    if (kind === 'prefunding' && balance > 0n && balance > (state.balances.get(k) ?? 0n)) {
      throw new InvariantError(`the commit would overdraw ${asset} prefunding`);
    }
    if (kind === 'credit_receivable') {
      const limit = state.creditLimitOf(asset);
      assert(
        limit === null || balance <= limit || balance <= (state.balances.get(k) ?? 0n),
        `the commit would pass the ${asset} credit limit`,
      );
    }
  }
  const consumed = new Set<string>();
  decisions.forEach((d, i) => {
    if (d.kind !== 'accept' && d.kind !== 'fail') return;
    const quoteId = candidates[i]!.quoteId;
    assert(!consumed.has(quoteId), `quote ${quoteId} consumed twice in one commit`);
    consumed.add(quoteId);
  });
}
