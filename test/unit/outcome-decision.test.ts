import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { assertBalanced, dailyCloseEntry, refundPostings, type FundingAccount } from '../../src/domain/ledger.ts';
import {
  backoffDelayMs,
  decideOutcomeCommit,
  outcomeLockPlan,
  type OutcomeCommitState,
  type OutcomeJob,
  type OutcomePayment,
  type RailReport,
  type ResolutionSchedule,
} from '../../src/domain/commit/outcome-decision.ts';
import { accountKeyOf, counterKeyOf, trackedCounters } from '../../src/domain/commit/keys.ts';
import type { PaymentStatus } from '../../src/domain/payment-state.ts';

const TENANT = '00000000-0000-4000-8000-000000000001';
const NOW = new Date('2026-11-23T15:00:00Z');
const SCHEDULE: ResolutionSchedule = { intervalMs: 1000, backoffMaxMs: 600_000, attemptsMax: 6, hintMaxMs: 3_600_000 };
/** The bank reference of a settled (or reversed) payment of arbPayment. */
const SETTLED_WITH = '123456789012';

const arbPayment = (i: number): fc.Arbitrary<OutcomePayment> =>
  fc
    .record({
      status: fc.constantFrom<PaymentStatus>('submitted', 'submitted', 'unknown', 'settled', 'failed', 'reversed'),
      funding: fc.constantFrom<FundingAccount>('prefunding', 'credit_receivable'),
      usd: fc.boolean(),
      deliver: fc.bigInt({ min: 92_500n, max: 10_000_000n }),
      customer: fc.option(
        fc.constantFrom('00000000-0000-4000-8000-0000000000c1', '00000000-0000-4000-8000-0000000000c2'),
        { nil: null },
      ),
      attempts: fc.integer({ min: 0, max: 8 }),
    })
    .map((r) => {
      const fee = (r.deliver + 99n) / 100n;
      const settledLike = r.status === 'settled' || r.status === 'reversed';
      return {
        tenant_id: TENANT,
        mode: 'test' as const,
        id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        status: r.status,
        status_reason: r.status === 'failed' ? 'rail_rejected' : null,
        message: 'as it was',
        compensated: r.status === 'failed',
        next_check_at: null,
        resolution_parked_at: null,
        funding_account: r.funding,
        source_asset: r.usd ? 'USD' : 'BS',
        source_amount: r.usd ? (r.deliver + fee) / 925n + 1n : r.deliver + fee,
        payout_asset: 'BS',
        payout_amount: r.deliver,
        fee_amount: r.status === 'failed' ? 0n : fee,
        method: 'pago_movil' as const,
        method_requested: 'pago_movil' as const,
        customer_id: r.customer,
        beneficiary_id: '00000000-0000-4000-8000-0000000000b1',
        usage_day: '2026-11-22',
        check_attempts: r.attempts,
        created_at: new Date(NOW.getTime() - 120_000),
        bank_reference: settledLike ? SETTLED_WITH : null,
        settled_at: settledLike ? new Date(NOW.getTime() - 60_000) : null,
        metadata: (i % 2 === 0 ? { order_id: `order-${i}` } : {}) as Record<string, string>,
      };
    });

const BANK_REFERENCE = fc.constantFrom(SETTLED_WITH, SETTLED_WITH, SETTLED_WITH, '000000000002');

const arbReport: fc.Arbitrary<RailReport> = fc.oneof(
  fc.record({
    status: fc.constant('processing' as const),
    retryAfterMs: fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: undefined }),
  }),
  fc.record({ status: fc.constant('unconfirmed' as const) }),
  fc.constant({ status: 'timeout' as const }),
  fc.constant({ status: 'error' as const, message: 'boom' }),
  // Mostly the bank reference a settled payment of arbPayment has; sometimes another (a contradiction).
  BANK_REFERENCE.map((bankReference) => ({ status: 'settled' as const, bankReference, settledAt: NOW })),
  fc
    .constantFrom('rail_rejected', 'invalid_destination_account')
    .map((reason) => ({ status: 'failed' as const, reason })),
  BANK_REFERENCE.map((bankReference) => ({ status: 'reversed' as const, bankReference, reason: 'returned_by_bank' })),
);

interface Scenario {
  payments: OutcomePayment[];
  jobs: OutcomeJob[];
  drawn: Record<string, bigint>;
}

const arbScenario: fc.Arbitrary<Scenario> = fc.integer({ min: 1, max: 6 }).chain((n) =>
  fc
    .record({
      payments: fc.tuple(...Array.from({ length: n }, (_, i) => arbPayment(i))),
      jobs: fc.array(
        fc.record({
          index: fc.integer({ min: 0, max: n - 1 }),
          report: arbReport,
          recheck: fc.constantFrom<OutcomeJob['recheck']>('backoff', { afterMs: 1000 }),
          notified: fc.boolean(),
        }),
        { minLength: 1, maxLength: 10 },
      ),
      // Credit drawn may be anything down to zero: a close may have settled it since the payouts.
      drawn: fc.record({ BS: fc.bigInt({ min: 0n, max: 30_000_000n }), USD: fc.bigInt({ min: 0n, max: 30_000n }) }),
    })
    .map((r) => ({
      payments: r.payments,
      drawn: r.drawn,
      jobs: r.jobs.map((j, n) => ({
        paymentId: r.payments[j.index]!.id,
        report: j.report,
        actor: j.notified ? ('provider_event' as const) : ('reaper' as const),
        settledReason: 'resolved_by_reaper',
        recheck: j.recheck,
        ...(j.notified ? { notification: { id: `n-${n}`, raw: {}, occurredAt: NOW } } : {}),
      })),
    })),
);

function stateOf(
  s: Scenario,
  payments = s.payments,
  balances?: Map<string, bigint>,
  counters?: Map<string, { amount: bigint; count: bigint }>,
): OutcomeCommitState {
  const plan = outcomeLockPlan(s.jobs.map((job) => ({ job, payment: payments.find((p) => p.id === job.paymentId)! })));
  const held = new Map<string, bigint>();
  for (const a of plan.accounts) {
    const k = accountKeyOf(a);
    held.set(
      k,
      balances?.get(k) ??
        (a.kind === 'credit_receivable' ? (s.drawn[a.asset] ?? 0n) : a.kind === 'prefunding' ? -1_000_000_000n : 0n),
    );
  }
  const usage = new Map<string, { amount: bigint; count: bigint }>();
  // Usage counted when each payout was accepted: at least what a give-back takes.
  for (const c of plan.counters)
    usage.set(
      `${c.day}|${counterKeyOf(c.counter)}`,
      counters?.get(`${c.day}|${counterKeyOf(c.counter)}`) ?? { amount: 100_000_000n, count: 50n },
    );
  return {
    now: NOW,
    schedule: SCHEDULE,
    payments: new Map(payments.map((p) => [p.id, p])),
    balances: held,
    counters: usage,
  };
}

/** The state after a decided batch: rows, balances and counters as the batch leaves them. */
function applied(s: Scenario, state: OutcomeCommitState, decided: ReturnType<typeof decideOutcomeCommit>) {
  const payments = s.payments.map((p) => ({ ...p }));
  decided.decisions.forEach((d, i) => {
    if (!d.after) return;
    const row = payments.find((p) => p.id === s.jobs[i]!.paymentId)!;
    Object.assign(row, d.after);
  });
  const balances = new Map(state.balances);
  for (const [k, { delta }] of decided.accountDeltas) balances.set(k, (balances.get(k) ?? 0n) + delta);
  const counters = new Map(state.counters);
  for (const [k, g] of decided.giveBacks) {
    const c = counters.get(k)!;
    counters.set(k, { amount: c.amount - g.amount, count: c.count - g.count });
  }
  return { payments, balances, counters };
}

const RUNS = { numRuns: 400 };

describe('decideOutcomeCommit (pure)', () => {
  it('one outcome event per payment, a reversal only of a settlement, and the final status follows the events', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const state = stateOf(s);
        const decided = decideOutcomeCommit(state, s.jobs);
        for (const p of s.payments) {
          const decidedEvents = decided.decisions.flatMap((d, i) => (s.jobs[i]!.paymentId === p.id ? d.events : []));
          for (const e of decidedEvents)
            assert.deepEqual(e.payload.metadata, p.metadata, `${e.type} carries the payout's metadata`);
          const events = decidedEvents.map((e) => e.type);
          const outcomes = events.filter((e) => e === 'payment.settled' || e === 'payment.failed');
          const unresolved = p.status === 'submitted' || p.status === 'unknown';
          assert.ok(outcomes.length <= (unresolved ? 1 : 0), `${p.status} payment got ${events.join(',')}`);
          const reversals = events.filter((e) => e === 'payment.reversed').length;
          assert.ok(reversals <= (p.status === 'reversed' || p.status === 'failed' ? 0 : 1));
          if (reversals === 1)
            assert.ok(p.status === 'settled' || outcomes[0] === 'payment.settled', 'reversed only after settling');
          if (events.at(-1) === 'payment.settled')
            assert.equal(applied(s, state, decided).payments.find((x) => x.id === p.id)!.status, 'settled');
        }
      }),
      RUNS,
    );
  });

  it('postings balance; credit drawn never goes below zero and prefunding never above it, whenever the close ran', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const state = stateOf(s);
        const decided = decideOutcomeCommit(state, s.jobs);
        for (const d of decided.decisions) for (const e of d.entries) assertBalanced(e);
        const after = applied(s, state, decided).balances;
        for (const [k, balance] of after) {
          if (k.endsWith('/credit_receivable')) assert.ok(balance >= 0n, `${k} = ${balance}`);
          if (k.endsWith('/prefunding')) assert.ok(balance <= 0n, `${k} = ${balance}`);
        }
      }),
      RUNS,
    );
  });

  it('a failure refunds exactly the charge and a reversal exactly the delivered amount, to the tenant', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const state = stateOf(s);
        const decided = decideOutcomeCommit(state, s.jobs);
        decided.decisions.forEach((d, i) => {
          const p = s.payments.find((x) => x.id === s.jobs[i]!.paymentId)!;
          for (const e of d.entries) {
            const toTenant = e.postings
              .filter((x) => x.account === 'prefunding' || x.account === 'credit_receivable')
              .reduce((acc, x) => acc - x.amount, 0n);
            if (e.kind === 'payout_failure') assert.equal(toTenant, p.source_amount);
            if (e.kind === 'payout_reversal') assert.equal(toTenant, p.payout_amount);
            if (e.kind === 'payout_settlement')
              assert.deepEqual(e.postings.find((x) => x.account === 'treasury')?.amount, -p.payout_amount);
          }
        });
      }),
      RUNS,
    );
  });

  it('onlyFrom: a job applies only to a payment in one of its states, else decides nothing; a return never settles first', () => {
    const STATUSES: PaymentStatus[] = ['submitted', 'unknown', 'settled', 'failed', 'reversed'];
    const arbOnlyFrom = fc.option(fc.subarray(STATUSES, { minLength: 1 }), { nil: undefined });
    fc.assert(
      fc.property(arbScenario, fc.array(arbOnlyFrom, { minLength: 10, maxLength: 10 }), (s, onlyFroms) => {
        const jobs = s.jobs.map((job, i) => ({ ...job, onlyFrom: onlyFroms[i] }));
        const decided = decideOutcomeCommit(stateOf({ ...s, jobs }), jobs);
        // Each job sees the row as the jobs before it left it.
        const status = new Map(s.payments.map((p) => [p.id, p.status]));
        decided.decisions.forEach((d, i) => {
          const job = jobs[i]!;
          const before = status.get(job.paymentId)!;
          if (job.onlyFrom && !job.onlyFrom.includes(before)) {
            assert.deepEqual(
              [d.after, d.transitions, d.entries, d.events, d.giveBack],
              [undefined, [], [], [], false],
              `${before} is not in ${job.onlyFrom.join(',')}`,
            );
          }
          if (
            job.onlyFrom &&
            job.report.status === 'reversed' &&
            !job.onlyFrom.some((x) => x === 'submitted' || x === 'unknown')
          ) {
            assert.ok(
              !d.events.some((e) => e.type === 'payment.settled'),
              'a return limited to settled payments never settles one first',
            );
          }
          if (d.after) status.set(job.paymentId, d.after.status);
        });
        // Every state allowed: the same decisions as without the precondition.
        const open = s.jobs.map((job) => ({ ...job, onlyFrom: STATUSES }));
        const same = (d: ReturnType<typeof decideOutcomeCommit>) =>
          d.decisions.map((x) => [x.after?.status, x.transitions, x.events.map((e) => e.type), x.giveBack]);
        assert.deepEqual(same(decideOutcomeCommit(stateOf(s), open)), same(decideOutcomeCommit(stateOf(s), s.jobs)));
      }),
      RUNS,
    );
  });

  it('is idempotent: the same reports applied again change nothing', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const state = stateOf(s);
        const first = decideOutcomeCommit(state, s.jobs);
        const after = applied(s, state, first);
        // A report that contradicted the payment then (a return notified before the settlement) is
        // acknowledged with its anomaly, never heard again: only the others come again.
        const jobs = s.jobs.filter((_, i) => !first.decisions[i]!.anomaly);
        const again = decideOutcomeCommit(
          stateOf({ ...s, jobs }, after.payments, after.balances, after.counters),
          jobs,
        );
        for (const d of again.decisions) {
          assert.deepEqual(d.events, []);
          assert.deepEqual(d.entries, []);
          assert.equal(d.giveBack, false);
        }
      }),
      RUNS,
    );
  });

  it('a report that contradicts the payment changes nothing of it: the decision only carries the anomaly', () => {
    let seen = 0;
    fc.assert(
      fc.property(arbScenario, (s) => {
        const rows = new Map(s.payments.map((p) => [p.id, p]));
        decideOutcomeCommit(stateOf(s), s.jobs).decisions.forEach((d, i) => {
          const job = s.jobs[i]!;
          const before = rows.get(job.paymentId)!;
          if (d.after) rows.set(job.paymentId, { ...before, ...d.after });
          if (!d.anomaly) return;
          seen += 1;
          assert.deepEqual(
            [d.transitions, d.entries, d.events, d.giveBack, d.beneficiary],
            [[], [], [], false, undefined],
          );
          if (d.after === undefined) return;
          // Only an answer about an unresolved payment moves its next question along the backoff.
          assert.equal(job.notification, undefined);
          const { next_check_at: _next, resolution_parked_at: _parked, ...kept } = d.after;
          const { next_check_at: _n, resolution_parked_at: _p, ...was } = before;
          for (const [field, value] of Object.entries(kept))
            assert.deepEqual(value, (was as Record<string, unknown>)[field], field);
        });
      }),
      RUNS,
    );
    assert.ok(seen > 0, 'the scenarios contain contradictions');
  });

  it('a return of a payment we never saw settle: an anomaly when notified, settled then reversed when the rail answers so', () => {
    const payment = fc.sample(arbPayment(0), { numRuns: 1, seed: 7 })[0]!;
    const submitted: OutcomePayment = {
      ...payment,
      status: 'submitted',
      status_reason: null,
      bank_reference: null,
      settled_at: null,
      fee_amount: 1_000n,
      compensated: false,
    };
    const report: RailReport = { status: 'reversed', bankReference: SETTLED_WITH, reason: 'returned_by_bank' };
    const job: OutcomeJob = {
      paymentId: submitted.id,
      report,
      actor: 'reaper',
      settledReason: 'resolved_by_reaper',
      recheck: 'backoff',
    };
    const scenario = (j: OutcomeJob): Scenario => ({ payments: [submitted], jobs: [j], drawn: { BS: 0n, USD: 0n } });
    const notifiedJob: OutcomeJob = {
      ...job,
      actor: 'provider_event',
      notification: { id: 'n-1', raw: {}, occurredAt: NOW },
    };
    const [notified] = decideOutcomeCommit(stateOf(scenario(notifiedJob)), [notifiedJob]).decisions;
    assert.equal(notified!.anomaly?.kind, 'return_of_unresolved');
    assert.deepEqual([notified!.after, notified!.events], [undefined, []]);
    const [answered] = decideOutcomeCommit(stateOf(scenario(job)), [job]).decisions;
    assert.equal(answered!.anomaly, undefined);
    assert.deepEqual(
      answered!.events.map((e) => e.type),
      ['payment.settled', 'payment.reversed'],
    );
  });

  it('gives usage back once per failed or reversed payout, to the day it was counted', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const state = stateOf(s);
        const decided = decideOutcomeCommit(state, s.jobs);
        const expected = new Map<string, bigint>();
        decided.decisions.forEach((d, i) => {
          if (!d.giveBack) return;
          const p = s.payments.find((x) => x.id === s.jobs[i]!.paymentId)!;
          for (const c of trackedCounters(TENANT, {
            customerId: p.customer_id,
            beneficiaryId: p.beneficiary_id!,
            method: p.method!,
          })) {
            const k = `${p.usage_day}|${counterKeyOf(c)}`;
            expected.set(k, (expected.get(k) ?? 0n) + p.payout_amount);
          }
        });
        assert.deepEqual(new Map([...decided.giveBacks].map(([k, g]) => [k, g.amount])), expected);
        assert.deepEqual(decided.counterShortfalls, []);
      }),
      RUNS,
    );
  });

  it('asks again on a backoff that grows and ends: parked after the last attempt, never invented', () => {
    fc.assert(
      fc.property(arbScenario, (s) => {
        const state = stateOf(s);
        const decided = decideOutcomeCommit(state, s.jobs);
        decided.decisions.forEach((d, i) => {
          const job = s.jobs[i]!;
          const p = s.payments.find((x) => x.id === job.paymentId)!;
          const open = ['processing', 'unconfirmed', 'timeout', 'error'].includes(job.report.status);
          if (!open || !d.after) return;
          assert.ok(
            d.after.status === 'submitted' || d.after.status === 'unknown',
            'an open answer never resolves a payment',
          );
          if (job.recheck === 'backoff' && p.check_attempts >= SCHEDULE.attemptsMax) {
            assert.equal(d.after.next_check_at, null);
            assert.ok(d.after.resolution_parked_at);
          } else {
            assert.ok(d.after.next_check_at && d.after.next_check_at > NOW);
          }
        });
      }),
      RUNS,
    );
    let previous = 0;
    for (let attempt = 1; attempt <= 40; attempt += 1) {
      const wait = backoffDelayMs(SCHEDULE, attempt);
      assert.ok(wait >= previous && wait <= SCHEDULE.backoffMaxMs);
      previous = wait;
    }
    assert.equal(backoffDelayMs(SCHEDULE, 1), 1000);
    assert.equal(backoffDelayMs(SCHEDULE, 3), 4000);
    assert.equal(backoffDelayMs(SCHEDULE, 2, 30_000), 30_000, "the rail's own hint wins when longer");
  });
});

describe('ledger: refunds and the daily close', () => {
  it('a refund never takes credit drawn below zero; the excess is owed as prefunding', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 12n }), fc.bigInt({ min: 0n, max: 10n ** 12n }), (amount, drawn) => {
        const postings = refundPostings('credit_receivable', 'BS', amount, drawn);
        const toCredit = -(postings.find((p) => p.account === 'credit_receivable')?.amount ?? 0n);
        const toPrefunding = -(postings.find((p) => p.account === 'prefunding')?.amount ?? 0n);
        assert.equal(toCredit + toPrefunding, amount);
        assert.ok(toCredit <= drawn && toCredit >= 0n && toPrefunding >= 0n);
      }),
    );
  });

  it('the close settles drawn net of owed, and leaves both at zero', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.bigInt({ min: 0n, max: 10n ** 12n }), (drawn, owed) => {
        const entry = dailyCloseEntry('USD', drawn, owed);
        if (drawn === 0n && owed === 0n) return assert.equal(entry, undefined);
        assertBalanced(entry!);
        const of = (kind: string) => entry!.postings.find((p) => p.account === kind)?.amount ?? 0n;
        assert.equal(drawn + of('credit_receivable'), 0n);
        assert.equal(-owed + of('prefunding'), 0n);
        assert.equal(of('treasury'), drawn - owed);
      }),
    );
  });
});
