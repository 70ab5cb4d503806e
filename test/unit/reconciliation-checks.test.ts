// The reconciliation checks against books written by the ledger's own entry builders: a tenant's
// random history (fundings, payouts in BS or USD, settlements, failures, returns, daily closes, on
// prefunding or on credit) always reconciles clean; one changed figure never does.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describe, it } from 'node:test';
import {
  dailyCloseEntry,
  failureEntry,
  fundingEntry,
  payoutEntry,
  reversalEntry,
  settlementEntry,
  type AccountKind,
  type FundingAccount,
  type LedgerEntry,
} from '../../src/domain/ledger.ts';
import type { PaymentStatus } from '../../src/domain/payment-state.ts';
import {
  bookFindings,
  paymentFindings,
  transactionFindings,
  type BookFigures,
  type ChargedGroup,
  type PaymentCheckRow,
  type PaymentEntryRow,
  type PaymentEventRow,
} from '../../src/domain/reconciliation-checks.ts';
import { discrepancyAnomalies, DiscrepancyTally, type Discrepancy } from '../../src/domain/reconciliation.ts';

const RUNS = { numRuns: 300 };

type Step =
  | { op: 'fund'; asset: 'BS' | 'USD'; amount: bigint }
  | {
      op: 'pay';
      source: 'BS' | 'USD';
      spend: bigint;
      deliver: bigint;
      fee: bigint;
      outcome: 'none' | 'settle' | 'fail' | 'return';
    }
  | { op: 'close' }
  | { op: 'later'; index: number; outcome: 'settle' | 'fail' | 'return' };

interface Simulated {
  payments: Array<{ row: PaymentCheckRow; entries: PaymentEntryRow[]; events: PaymentEventRow[] }>;
  other: LedgerEntry[];
  balances: Map<string, bigint>;
}

const amount = (max: number) => fc.bigInt({ min: 1n, max: BigInt(max) });
const arbStep: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant('fund' as const),
    asset: fc.constantFrom('BS' as const, 'USD' as const),
    amount: amount(10_000_000),
  }),
  fc.record({
    op: fc.constant('pay' as const),
    source: fc.constantFrom('BS' as const, 'USD' as const),
    spend: amount(5_000),
    deliver: amount(5_000_000),
    fee: fc.bigInt({ min: 0n, max: 50_000n }),
    outcome: fc.constantFrom('none' as const, 'settle' as const, 'fail' as const, 'return' as const),
  }),
  fc.record({ op: fc.constant('close' as const) }),
  fc.record({
    op: fc.constant('later' as const),
    index: fc.nat(),
    outcome: fc.constantFrom('settle' as const, 'fail' as const, 'return' as const),
  }),
);

/** A tenant's history written with the ledger's entry builders, as the batches write it. */
function simulate(funding: FundingAccount, steps: readonly Step[]): Simulated {
  const balances = new Map<string, bigint>();
  const sim: Simulated = { payments: [], other: [], balances };
  const post = (entry: LedgerEntry) => {
    for (const p of entry.postings)
      balances.set(`${p.asset}/${p.account}`, (balances.get(`${p.asset}/${p.account}`) ?? 0n) + p.amount);
    return entry;
  };
  const drawn = (asset: string) => balances.get(`${asset}/credit_receivable`) ?? 0n;
  let ids = 0;
  const record = (p: Simulated['payments'][number], entry: LedgerEntry) =>
    p.entries.push({ id: `t${(ids += 1)}`, kind: entry.kind, postings: post(entry).postings });
  const event = (p: Simulated['payments'][number], type: string) => p.events.push({ id: `e${(ids += 1)}`, type });
  const resolve = (p: Simulated['payments'][number], outcome: 'settle' | 'fail' | 'return') => {
    const row = p.row;
    const unresolved = row.status === 'submitted';
    if (outcome === 'fail' && unresolved) {
      const charged = payoutEntry({
        funding,
        sourceAsset: row.sourceAsset,
        sourceAmount: row.sourceAmount,
        deliverAmount: row.payoutAmount,
        feeAmount: row.feeAmount,
      });
      record(p, failureEntry(charged, funding, funding === 'credit_receivable' ? drawn(row.sourceAsset) : 0n));
      event(p, 'payment.failed');
      row.status = 'failed';
      row.feeAmount = 0n;
    } else if (outcome === 'settle' && unresolved) {
      record(p, settlementEntry(row.payoutAmount));
      event(p, 'payment.settled');
      row.status = 'settled';
    } else if (outcome === 'return' && (unresolved || row.status === 'settled')) {
      if (unresolved) resolve(p, 'settle');
      record(
        p,
        reversalEntry(
          funding,
          row.payoutAsset,
          row.payoutAmount,
          funding === 'credit_receivable' ? drawn(row.payoutAsset) : 0n,
        ),
      );
      event(p, 'payment.reversed');
      row.status = 'reversed';
    }
  };
  for (const step of steps) {
    if (step.op === 'fund') sim.other.push(post(fundingEntry(step.asset, step.amount)));
    if (step.op === 'close' && funding === 'credit_receivable') {
      for (const asset of ['BS', 'USD']) {
        const owed = -(balances.get(`${asset}/prefunding`) ?? 0n);
        const entry = dailyCloseEntry(asset, drawn(asset), owed > 0n ? owed : 0n);
        if (entry) sim.other.push(post(entry));
      }
    }
    if (step.op === 'later' && sim.payments.length > 0)
      resolve(sim.payments[step.index % sim.payments.length]!, step.outcome);
    if (step.op !== 'pay') continue;
    const sourceAmount = step.source === 'BS' ? step.deliver + step.fee : step.spend;
    const p = {
      row: {
        id: `p${(ids += 1)}`,
        status: 'submitted' as PaymentStatus,
        funding,
        sourceAsset: step.source,
        sourceAmount,
        payoutAsset: 'BS',
        payoutAmount: step.deliver,
        feeAmount: step.fee,
      },
      entries: [] as PaymentEntryRow[],
      events: [] as PaymentEventRow[],
    };
    sim.payments.push(p);
    record(
      p,
      payoutEntry({
        funding,
        sourceAsset: step.source,
        sourceAmount,
        deliverAmount: step.deliver,
        feeAmount: step.fee,
      }),
    );
    if (step.outcome !== 'none') resolve(p, step.outcome);
  }
  return sim;
}

/** The whole-book figures of a simulated history, as readBooks would read them. */
function booksOf(sim: Simulated): BookFigures {
  const postings = new Map<
    string,
    { kind: LedgerEntry['kind']; asset: string; account: AccountKind; amount: bigint }
  >();
  const entries = [...sim.other, ...sim.payments.flatMap((p) => p.entries)];
  for (const e of entries) {
    for (const p of e.postings) {
      const key = `${e.kind}|${p.asset}|${p.account}`;
      const sum = postings.get(key) ?? { kind: e.kind, asset: p.asset, account: p.account, amount: 0n };
      postings.set(key, { ...sum, amount: sum.amount + p.amount });
    }
  }
  const charged = new Map<string, ChargedGroup>();
  for (const { row } of sim.payments) {
    const key = `${row.status}|${row.funding}|${row.sourceAsset}|${row.payoutAsset}`;
    const g = charged.get(key) ?? {
      status: row.status,
      funding: row.funding!,
      sourceAsset: row.sourceAsset,
      payoutAsset: row.payoutAsset,
      count: 0,
      sourceAmount: 0n,
      payoutAmount: 0n,
      feeAmount: 0n,
    };
    charged.set(key, {
      ...g,
      count: g.count + 1,
      sourceAmount: g.sourceAmount + row.sourceAmount,
      payoutAmount: g.payoutAmount + row.payoutAmount,
      feeAmount: g.feeAmount + row.feeAmount,
    });
  }
  return {
    balances: [...sim.balances].map(([key, balance]) => {
      const [asset, account] = key.split('/') as [string, AccountKind];
      return { asset, account, balance };
    }),
    postings: [...postings.values()],
    charged: [...charged.values()],
    unpostedCloses: [],
  };
}

const arbHistory = fc.record({
  funding: fc.constantFrom<FundingAccount>('prefunding', 'credit_receivable'),
  steps: fc.array(arbStep, { minLength: 1, maxLength: 30 }),
});
const lines = (findings: readonly Discrepancy[]) =>
  findings.map((d) => `${d.check} ${d.subjectId} ${d.facet}: ${d.expected} -> ${d.found}`);

describe('reconciliation checks', () => {
  it('a history written by the ledger builders reconciles clean: books, payments, their entries and events', () => {
    fc.assert(
      fc.property(arbHistory, ({ funding, steps }) => {
        const sim = simulate(funding, steps);
        assert.deepEqual(lines(bookFindings(booksOf(sim))), []);
        for (const p of sim.payments) assert.deepEqual(lines(paymentFindings(p.row, p.entries, p.events)), []);
      }),
      RUNS,
    );
  });

  it('one posting changed, dropped or added to is always caught by the payment check and by the books', () => {
    fc.assert(
      fc.property(
        arbHistory,
        fc.nat(),
        fc.nat(),
        fc.bigInt({ min: 1n, max: 1_000n }),
        ({ funding, steps }, which, posting, delta) => {
          const sim = simulate(funding, steps);
          if (sim.payments.length === 0) return;
          const p = sim.payments[which % sim.payments.length]!;
          const entry = p.entries[posting % p.entries.length]!;
          const postings = [...entry.postings];
          const target = postings[posting % postings.length]!;
          postings[posting % postings.length] = { ...target, amount: target.amount + delta };
          const changed = p.entries.map((e) => (e === entry ? { ...e, postings } : e));
          assert.ok(lines(paymentFindings(p.row, changed, p.events)).some((l) => l.startsWith('payment_entries')));
          // The account's balance was kept by the writer; its postings now say otherwise.
          p.entries.splice(p.entries.indexOf(entry), 1, { ...entry, postings });
          assert.ok(lines(bookFindings(booksOf(sim))).some((l) => l.startsWith('account_balances')));
          assert.ok(
            lines(
              transactionFindings([
                {
                  id: entry.id,
                  kind: entry.kind,
                  paymentId: p.row.id,
                  paymentFound: true,
                  postings: postings.length,
                  unbalanced: [{ asset: target.asset, total: delta }],
                },
              ]),
            ).length === 1,
          );
        },
      ),
      RUNS,
    );
  });

  it("a payment's status, entries or events out of step with each other are caught", () => {
    fc.assert(
      fc.property(
        arbHistory,
        fc.nat(),
        fc.constantFrom('drop_entry', 'drop_event', 'double_event', 'status'),
        ({ funding, steps }, which, how) => {
          const sim = simulate(funding, steps);
          if (sim.payments.length === 0) return;
          const p = sim.payments[which % sim.payments.length]!;
          const row = { ...p.row };
          let { entries, events } = p;
          if (how === 'drop_entry') entries = entries.slice(0, -1);
          // An unresolved payment has no event to drop: it gets one it should not have.
          if (how === 'drop_event' && events.length > 0) events = events.slice(0, -1);
          else if (how === 'double_event' || how === 'drop_event')
            events = [...events, { id: 'x', type: events[0]?.type ?? 'payment.settled' }];
          if (how === 'status') row.status = row.status === 'submitted' ? 'settled' : 'submitted';
          assert.ok(paymentFindings(row, entries, events).length > 0, how);
        },
      ),
      RUNS,
    );
  });

  it('a failure before the rail has no entry and one payment.failed; anything else is reported', () => {
    const row: PaymentCheckRow = {
      id: 'p',
      status: 'failed',
      funding: null,
      sourceAsset: 'BS',
      sourceAmount: 101n,
      payoutAsset: 'BS',
      payoutAmount: 100n,
      feeAmount: 0n,
    };
    assert.deepEqual(paymentFindings(row, [], [{ id: '1', type: 'payment.failed' }]), []);
    const entry: PaymentEntryRow = {
      id: 't',
      kind: 'payout',
      postings: payoutEntry({
        funding: 'prefunding',
        sourceAsset: 'BS',
        sourceAmount: 101n,
        deliverAmount: 100n,
        feeAmount: 1n,
      }).postings,
    };
    assert.deepEqual(lines(paymentFindings(row, [entry], [{ id: '1', type: 'payment.failed' }])), [
      'payment_entries p entries: none -> payout',
    ]);
    assert.deepEqual(lines(paymentFindings({ ...row, status: 'returned' }, [], [])), [
      'payment_entries p status: submitted, unknown, settled, failed or reversed -> returned',
    ]);
  });

  it('an entry names its payment: a payout entry without one, a funding with one, or one of a payment that does not exist', () => {
    const base = { postings: 2, unbalanced: [] };
    assert.deepEqual(
      lines(transactionFindings([{ ...base, id: 'a', kind: 'payout', paymentId: null, paymentFound: false }])),
      ['payment_entries a payment: a payment -> none'],
    );
    assert.deepEqual(
      lines(transactionFindings([{ ...base, id: 'b', kind: 'funding', paymentId: 'p', paymentFound: true }])),
      ['payment_entries b payment: no payment (a funding entry) -> p'],
    );
    assert.deepEqual(
      lines(
        transactionFindings([{ ...base, id: 'c', kind: 'payout_settlement', paymentId: 'q', paymentFound: false }]),
      ),
      ['payment_entries c payment: an existing payment of this mode -> q'],
    );
    assert.deepEqual(
      lines(
        transactionFindings([
          {
            id: 'd',
            kind: 'funding',
            paymentId: null,
            paymentFound: false,
            postings: 1,
            unbalanced: [{ asset: 'BS', total: 5n }],
          },
        ]),
      ),
      ['transaction_balanced d postings: at least 2 -> 1', 'transaction_balanced d BS: 0 -> 5'],
    );
  });
});

describe('the tally of a run', () => {
  const finding = (check: Discrepancy['check'], n: number): Discrepancy => ({
    check,
    subjectType: 'payment',
    subjectId: `s${n}`,
    facet: 'f',
    paymentId: null,
    expected: '1',
    found: '2',
    detail: {},
  });

  it('counts every discrepancy, keeps the first ones of each check up to its bound, and says which checks ran', () => {
    const tally = new DiscrepancyTally(2);
    tally.ranCheck('account_balances', 'payment_entries', 'limit_usage');
    tally.add([
      finding('payment_entries', 1),
      finding('payment_entries', 2),
      finding('payment_entries', 3),
      finding('limit_usage', 1),
    ]);
    tally.addUnstored('limit_usage', 40);
    assert.equal(tally.total, 44);
    assert.deepEqual(
      tally.stored().map((d) => `${d.check} ${d.subjectId}`),
      ['payment_entries s1', 'payment_entries s2', 'limit_usage s1'],
    );
    const results = tally.results();
    assert.deepEqual(results.payment_entries, { verdict: 'fail', discrepancies: 3, stored: 2 });
    assert.deepEqual(results.limit_usage, { verdict: 'fail', discrepancies: 41, stored: 1 });
    assert.deepEqual(results.account_balances, { verdict: 'pass', discrepancies: 0, stored: 0 });
    assert.deepEqual(results.outcome_events, { verdict: 'not_run', discrepancies: 0, stored: 0 });
  });

  it('gives each stored discrepancy an anomaly whose dedup key names the check, the subject and both figures', () => {
    const run = { id: 'r', tenantId: 't', mode: 'live' as const };
    const [a, b] = discrepancyAnomalies(run, [finding('in_flight', 1), { ...finding('in_flight', 1), found: '3' }]);
    assert.equal(a!.dedupKey, 'reconciliation:t:live:in_flight:payment:s1:f:1:2');
    assert.notEqual(a!.dedupKey, b!.dedupKey, 'the figures moved: another anomaly');
    assert.deepEqual(a!.raw, {
      runId: 'r',
      check: 'in_flight',
      subjectType: 'payment',
      subjectId: 's1',
      facet: 'f',
      evidence: {},
    });
    assert.deepEqual([a!.ours, a!.theirs], [{ f: '1' }, { f: '2' }], 'both figures, under the facet that disagrees');
    const long = discrepancyAnomalies(run, [{ ...finding('limit_usage', 1), subjectId: 'x'.repeat(400) }])[0]!;
    assert.match(long.dedupKey, /^reconciliation:sha256:[0-9a-f]{64}$/, 'a key past the bound becomes its digest');
  });
});
