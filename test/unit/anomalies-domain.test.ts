// What contradicts our record of a payment, and how a contradiction is keyed so that it is stored once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  answerDedupKey,
  contradictionOf,
  DEDUP_KEY_LENGTH_MAX,
  jsonOf,
  notificationDedupKey,
  type FinalReport,
  type PaymentRecord,
} from '../../src/domain/anomalies.ts';
import type { PaymentStatus } from '../../src/domain/payment-state.ts';

const REF = '123456789012';
const OTHER_REF = '999999999999';

function payment(status: PaymentStatus): PaymentRecord {
  const settledLike = status === 'settled' || status === 'reversed';
  return {
    status,
    status_reason: status === 'failed' ? 'rail_rejected' : null,
    payout_asset: 'BS',
    payout_amount: 1_000_000n,
    bank_reference: settledLike ? REF : null,
  };
}

const settled: FinalReport = { status: 'settled', bankReference: REF };
const failed: FinalReport = { status: 'failed', reason: 'rail_rejected' };
const returned: FinalReport = { status: 'reversed', bankReference: REF, reason: 'returned_by_bank' };

describe('contradictionOf', () => {
  const cases: Array<[PaymentStatus, FinalReport, boolean, string | undefined]> = [
    ['failed', settled, false, 'settled_after_failed'],
    ['failed', settled, true, 'settled_after_failed'],
    ['settled', failed, true, 'failed_after_settled'],
    ['reversed', failed, false, 'failed_after_settled'],
    ['failed', returned, true, 'return_of_failed'],
    ['submitted', returned, true, 'return_of_unresolved'],
    ['unknown', returned, true, 'return_of_unresolved'],
    // The rail's answer that a transfer settled and was returned is its history, not a contradiction.
    ['submitted', returned, false, undefined],
    // Agreeing, or repeating what we recorded.
    ['settled', settled, true, undefined],
    ['reversed', settled, false, undefined],
    ['reversed', returned, true, undefined],
    ['settled', returned, true, undefined],
    ['failed', failed, true, undefined],
    ['submitted', settled, true, undefined],
    ['unknown', failed, false, undefined],
  ];
  for (const [status, report, notified, kind] of cases) {
    it(`${report.status} ${notified ? 'notified' : 'answered'} for a ${status} payment: ${kind ?? 'no contradiction'}`, () => {
      assert.equal(contradictionOf(payment(status), report, notified)?.kind, kind);
    });
  }

  it('an amount or a bank reference other than ours, each compared only when both sides have one', () => {
    assert.equal(
      contradictionOf(payment('settled'), { ...settled, amountMinor: 999_999n }, true)?.kind,
      'amount_mismatch',
    );
    assert.equal(
      contradictionOf(payment('submitted'), { ...settled, amountMinor: 1_000_001n }, false)?.kind,
      'amount_mismatch',
    );
    assert.equal(contradictionOf(payment('settled'), { ...settled, amountMinor: 1_000_000n }, true), undefined);
    assert.equal(
      contradictionOf(payment('settled'), { ...settled, bankReference: OTHER_REF }, true)?.kind,
      'bank_reference_mismatch',
    );
    assert.equal(
      contradictionOf(payment('settled'), { ...returned, bankReference: OTHER_REF }, true)?.kind,
      'bank_reference_mismatch',
    );
    assert.equal(
      contradictionOf(payment('settled'), { status: 'reversed', reason: 'returned_by_bank' }, true),
      undefined,
      'a return without a bank reference',
    );
    assert.equal(
      contradictionOf(payment('submitted'), { ...settled, bankReference: OTHER_REF }, false),
      undefined,
      'we have none yet',
    );
    // The status comes first.
    assert.equal(
      contradictionOf(payment('failed'), { ...settled, amountMinor: 5n }, true)?.kind,
      'settled_after_failed',
    );
  });

  it('carries both sides as JSON: amounts as decimal strings', () => {
    const found = contradictionOf(
      payment('settled'),
      { ...returned, bankReference: OTHER_REF, amountMinor: 1_000_000n },
      true,
    )!;
    assert.deepEqual(found.ours, {
      status: 'settled',
      statusReason: null,
      asset: 'BS',
      amount: '1000000',
      bankReference: REF,
    });
    assert.deepEqual(found.theirs, {
      status: 'reversed',
      amount: '1000000',
      bankReference: OTHER_REF,
      reason: 'returned_by_bank',
    });
  });
});

describe('dedup keys', () => {
  it('one per notification; one per payment and distinct thing answered; bounded', () => {
    const a = notificationDedupKey('settled_after_failed', 'test', 'notice:1');
    assert.equal(a, notificationDedupKey('settled_after_failed', 'test', 'notice:1'));
    assert.notEqual(a, notificationDedupKey('settled_after_failed', 'test', 'notice:2'));
    assert.notEqual(a, notificationDedupKey('settled_after_failed', 'live', 'notice:1'));
    const theirs = { status: 'settled', amount: '5', bankReference: REF, reason: null };
    const b = answerDedupKey('amount_mismatch', 't1', 'p1', theirs);
    assert.equal(b, answerDedupKey('amount_mismatch', 't1', 'p1', { ...theirs }));
    assert.notEqual(b, answerDedupKey('amount_mismatch', 't1', 'p1', { ...theirs, amount: '6' }));
    assert.notEqual(b, answerDedupKey('amount_mismatch', 't1', 'p2', theirs));
    assert.ok(
      notificationDedupKey('bank_reference_mismatch', 'test', 'x'.repeat(10_000)).length <= DEDUP_KEY_LENGTH_MAX,
    );
  });

  it('jsonOf writes bigints and dates as strings and drops undefined fields', () => {
    assert.deepEqual(jsonOf({ a: 1n, b: new Date('2026-01-02T03:04:05.000Z'), c: undefined, d: [2n, null] }), {
      a: '1',
      b: '2026-01-02T03:04:05.000Z',
      d: ['2', null],
    });
  });
});
