// The connector kit's cases for a rail's statement (RailAdapter.statement): the day's record as the
// bank keeps it is what the daily pull matches our books against, so it must name every transfer that
// reached a final state that day, once, with the bank's status, our amount and its bank reference,
// whatever its page size; and a day the bank has not closed is RailStatementNotReady (asked again
// later), never an empty statement that would say "nothing happened".
import assert from 'node:assert/strict';
import { businessDate } from '../../../src/domain/caracas-time.ts';
import { RailStatementNotReady, type RailAdapter, type RailStatementEntry } from '../../../src/rails/rail.ts';
import type { ConnectorUnderTest } from './bank-control.ts';
import { arranged, assertSettled, bounded, KIT_EVENTUALLY_MS, KitSkip, outcomeOf, shown, submitted } from './checks.ts';

type Stating = ConnectorUnderTest & { adapter: RailAdapter & { statement: NonNullable<RailAdapter['statement']> } };

function stating(cut: ConnectorUnderTest): Stating {
  if (!cut.adapter.statement)
    throw new KitSkip('this adapter gives no statement (its rail is matched by a file an operator posts)');
  return cut as Stating;
}

async function statementOf(cut: Stating, day: string): Promise<RailStatementEntry[]> {
  const read = async () => {
    const entries: RailStatementEntry[] = [];
    for await (const entry of cut.adapter.statement(day, AbortSignal.timeout(KIT_EVENTUALLY_MS))) entries.push(entry);
    return entries;
  };
  return bounded(read(), KIT_EVENTUALLY_MS * 2, `the statement of ${day}`);
}

/** A settled and a rejected transfer are each on the day's statement once, as the bank has them, on every page size. */
async function statementNamesFinalTransfers(cut: ConnectorUnderTest): Promise<void> {
  const bank = stating(cut);
  const paid = await arranged(cut, { kind: 'settle' });
  const refused = await arranged(cut, { kind: 'fail', reason: 'invalid_destination_account' });
  const settled = await outcomeOf(cut, paid.reference, await submitted(cut, paid));
  assertSettled(settled, 'the transfer to be stated');
  assert.equal((await outcomeOf(cut, refused.reference, await submitted(cut, refused))).status, 'failed');
  const day = businessDate(new Date());
  const pageSizes = cut.bank.statementPageSize ? [1000, 1] : [undefined];
  try {
    for (const size of pageSizes) {
      if (size !== undefined) await cut.bank.statementPageSize!(size);
      const entries = await statementOf(bank, day);
      const of = (reference: string) => entries.filter((entry) => entry.reference === reference);
      assert.equal(
        of(paid.reference).length,
        1,
        `the paid transfer once on the statement (page size ${size}): ${shown(entries)}`,
      );
      assert.equal(
        of(refused.reference).length,
        1,
        `the refused transfer once on the statement (page size ${size}): ${shown(entries)}`,
      );
      const line = of(paid.reference)[0]!;
      assert.equal(line.status, 'settled', shown(line));
      assert.equal(line.amountMinor, paid.amountMinor.toString(), shown(line));
      assert.equal(line.bankReference, settled.status === 'settled' ? settled.bankReference : '', shown(line));
      assert.equal(line.valueDate, day, shown(line));
      assert.equal(of(refused.reference)[0]!.status, 'failed', shown(of(refused.reference)));
      assert.equal(new Set(entries.map((entry) => entry.reference)).size, entries.length, 'no reference twice');
    }
  } finally {
    if (cut.bank.statementPageSize) await cut.bank.statementPageSize(1000);
  }
}

/** A day the bank has not closed throws RailStatementNotReady. */
async function statementNotReadyIsSaid(cut: ConnectorUnderTest): Promise<void> {
  const bank = stating(cut);
  if (!cut.bank.statementNotReady) throw new KitSkip('the bank behind this adapter has every day ready');
  await cut.bank.statementNotReady(true);
  try {
    await assert.rejects(
      statementOf(bank, businessDate(new Date())),
      (error) => error instanceof RailStatementNotReady,
      'a day not closed is RailStatementNotReady',
    );
  } finally {
    await cut.bank.statementNotReady(false);
  }
}

/** The statement cases, by title, for the kit's suite (each also on its own, for the broken-adapter test). */
export const statementChecks = { statementNamesFinalTransfers, statementNotReadyIsSaid } as const;

export const STATEMENT_CASES = [
  [
    "the day's statement names each final transfer once, as the bank records it, on any page size",
    statementNamesFinalTransfers,
  ],
  ['a day the bank has not closed is RailStatementNotReady, never an empty statement', statementNotReadyIsSaid],
] as const;
