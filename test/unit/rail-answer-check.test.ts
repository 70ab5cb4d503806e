// The answer checks, one rule each: what a rail says is believed only when it is about our reference,
// gives an amount we can read (and ours, when we know it here), a plain bank reference, and a
// settlement time in the sane window.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  BANK_REFERENCE_PATTERN,
  checkEcho,
  RAIL_CLOCK_SKEW_MS,
  settledAtOf,
} from '../../src/domain/rail-answer-check.ts';
import { answerCheckedRail } from '../../src/rails/answer-check.ts';
import type { RailAdapter, RailLookup } from '../../src/rails/rail.ts';

const REF = '9b2d6c1e-0000-4000-8000-000000000001';

describe('rail answer checks', () => {
  it('an answer about another reference is doubted', () => {
    assert.deepEqual(checkEcho({ reference: REF }, { reference: 'someone-else' }), {
      doubt: { kind: 'reference_mismatch', theirs: { asked: REF, answeredAbout: 'someone-else' } },
    });
    assert.deepEqual(checkEcho({ reference: REF }, { reference: REF }), {});
  });

  it('an amount is a decimal string of minor units: a number, decimals, a sign, an exponent or nothing are unreadable', () => {
    for (const written of [1542, '1542.00', '-1', '+1', '1e5', '', ' 1', true, {}, '12345678901234567890']) {
      const result = checkEcho({ reference: REF }, { reference: REF, amountMinor: written });
      assert.ok(
        'doubt' in result && result.doubt.kind === 'unreadable_answer',
        `${JSON.stringify(written)}: ${JSON.stringify(result)}`,
      );
    }
    assert.deepEqual(checkEcho({ reference: REF }, { reference: REF, amountMinor: '154200' }), {
      amountMinor: 154_200n,
    });
  });

  it('an amount other than the one sent is a mismatch when we know ours', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 10n ** 15n }), fc.bigInt({ min: 1n, max: 10n ** 15n }), (ours, theirs) => {
        const result = checkEcho(
          { reference: REF, amountMinor: ours },
          { reference: REF, amountMinor: theirs.toString() },
        );
        return ours === theirs ? !('doubt' in result) : 'doubt' in result && result.doubt.kind === 'amount_mismatch';
      }),
    );
  });

  it('a bank reference is letters, digits and hyphens, 1 to 64', () => {
    for (const bad of ['=HYPERLINK("x")', '+1', 'a b', '<b>', 'x'.repeat(65), '', 12]) {
      const result = checkEcho({ reference: REF }, { reference: REF, bankReference: bad });
      assert.ok('doubt' in result && result.doubt.kind === 'unreadable_answer', JSON.stringify(bad));
    }
    assert.ok(BANK_REFERENCE_PATTERN.test('000123456789') && BANK_REFERENCE_PATTERN.test('BDV-2026-1'));
  });

  it('a settlement time in the future beyond the skew, or before the transfer began, is replaced by ours', () => {
    const sent = new Date('2026-12-02T10:00:00Z');
    const now = new Date('2026-12-02T10:05:00Z');
    assert.deepEqual(settledAtOf(new Date('2026-12-02T10:01:00Z'), sent, now), {
      settledAt: new Date('2026-12-02T10:01:00Z'),
    });
    assert.deepEqual(
      settledAtOf(new Date(now.getTime() + RAIL_CLOCK_SKEW_MS), sent, now).doubt,
      undefined,
      'at the edge',
    );
    for (const theirs of [
      new Date('2099-01-01T00:00:00Z'),
      new Date(sent.getTime() - RAIL_CLOCK_SKEW_MS - 1),
      new Date(Number.NaN),
    ]) {
      const decided = settledAtOf(theirs, sent, now);
      assert.equal(decided.settledAt, now);
      assert.equal(decided.doubt?.kind, 'implausible_settled_at');
    }
  });

  it('the wrapper: a submit answer is checked against the transfer sent, lookups against the reference asked, bulk by position', async () => {
    const answers: Record<string, RailLookup> = {
      [REF]: {
        status: 'settled',
        bankReference: '000000000001',
        settledAt: new Date(),
        echo: { reference: REF, amountMinor: '999', bankReference: '000000000001' },
      },
      other: { status: 'processing', echo: { reference: REF } },
    };
    const raw = {
      name: 'liar',
      submit: async () => answers[REF]!,
      lookup: async (reference: string) => answers[reference]!,
      lookupMany: async (references: readonly string[]) => references.map((r) => answers[r]!),
    } as unknown as RailAdapter;
    const rail = answerCheckedRail(raw);
    const transfer = { reference: REF, amountMinor: 1000n } as Parameters<RailAdapter['submit']>[0];
    assert.equal(
      ((await rail.submit(transfer, AbortSignal.timeout(1000))) as { doubt?: { kind: string } }).doubt?.kind,
      'amount_mismatch',
    );
    const looked = await rail.lookup(REF, 'live');
    assert.equal(looked.status, 'settled');
    assert.equal('amountMinor' in looked && looked.amountMinor, 999n, 'handed on for the outcome decision to compare');
    assert.ok(!('echo' in looked), 'the echo stops at the checks');
    const bulk = await rail.lookupMany!([REF, 'other'], 'live');
    assert.equal(bulk[0]!.status, 'settled');
    assert.equal((bulk[1] as { doubt?: { kind: string } }).doubt?.kind, 'reference_mismatch');
  });
});
