// The connector kit: every promise docs/connectors.md makes for a rail adapter, as checks any adapter
// must pass against a bank the test steers (BankControl). `connectorKit` declares them as one node:test
// suite; each check is also exported on its own, so a test can run one against a deliberately broken
// adapter and see it fail (test/integration/connector-kit-broken.test.ts).
//
// A check takes a fresh ConnectorUnderTest and throws an AssertionError when the adapter breaks a
// promise, or KitSkip when the bank cannot play the case (reported as skipped, with the reason).

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { RAIL_FAILURE_REASONS, type RailFailureReason } from '../../../src/domain/failure-reasons.ts';
import { INSTRUMENTS } from '../../../src/domain/instrument.ts';
import { RailNotReceivedError, type RailAdapter, type RailHealth, type RailTransfer } from '../../../src/rails/rail.ts';
import { callRail } from '../../../src/rails/send.ts';
import { ANSWER_CHECK_CASES } from './answer-checks.ts';
import { STATEMENT_CASES } from './statement.ts';
import type { ConnectorUnderTest } from './bank-control.ts';
import {
  acknowledged,
  arranged,
  assertCatalogue,
  assertFailedWith,
  assertSameTransfer,
  assertSettled,
  bounded,
  drained,
  eventually,
  isFinal,
  isPending,
  KIT_EVENTUALLY_MS,
  KitSkip,
  lookedUp,
  lookedUpMany,
  outcomeOf,
  pendingFor,
  shown,
  submitted,
} from './checks.ts';

export type KitCheck = (cut: ConnectorUnderTest) => Promise<void>;

/**
 * The longest one case may take. The hang case waits out the adapter's rail timeout (at most 60 s, the
 * bound of SANDBOX_RAIL_TIMEOUT_MS) besides its bounded waits; the others end far sooner.
 */
const KIT_CASE_TIMEOUT_MS = 100_000;
/** The longest a rail timeout the kit accepts: SANDBOX_RAIL_TIMEOUT_MS's own upper bound. */
const KIT_RAIL_TIMEOUT_MAX_MS = 60_000;
/** How long `health` may take: it is the circuit breaker's probe and a console read, so it is quick. */
const KIT_HEALTH_BOUND_MS = 2_000;
/** Submits of one reference sent at once in the concurrency case. */
const KIT_CONCURRENT_SUBMITS = 3;

/** A second submit of one reference: the same transfer and the same answer, never a second payment. */
async function duplicateSubmitIsOneTransfer(cut: ConnectorUnderTest): Promise<void> {
  const transfer = await arranged(cut, { kind: 'settle' });
  const first = await submitted(cut, transfer);
  const second = await submitted(cut, transfer);
  assertSameTransfer(first, second, 'two submits of one reference');
  const received = await cut.bank.submissionsOf(transfer.reference);
  assert.ok(received >= 1 && received <= 2, `the bank counts ${received} submits of a reference submitted twice`);
  const outcome = await outcomeOf(cut, transfer.reference, second);
  assertSettled(outcome, 'a lookup after two submits');
  assertSameTransfer(first, outcome, 'the first answer and a later lookup');
}

/** Submits of one reference at the same time (a retry racing the first send): still one transfer. */
async function concurrentSubmitsAreOneTransfer(cut: ConnectorUnderTest): Promise<void> {
  const transfer = await arranged(cut, { kind: 'settle' });
  const answers = await Promise.all(Array.from({ length: KIT_CONCURRENT_SUBMITS }, () => submitted(cut, transfer)));
  for (const answer of answers.slice(1)) assertSameTransfer(answers[0]!, answer, 'concurrent submits of one reference');
  const received = await cut.bank.submissionsOf(transfer.reference);
  assert.ok(
    received >= 1 && received <= KIT_CONCURRENT_SUBMITS,
    `the bank counts ${received} submits of ${KIT_CONCURRENT_SUBMITS}`,
  );
  const outcome = await outcomeOf(cut, transfer.reference, answers[0]!);
  assertSettled(outcome, 'a lookup after concurrent submits');
  for (const answer of answers) assertSameTransfer(answer, outcome, 'an answer and a later lookup');
}

/** `callRail` wrapping the adapter, remembering what its submit threw (RailNotReceivedError is a lie here). */
async function sendObserved(
  cut: ConnectorUnderTest,
  transfer: RailTransfer,
): Promise<{ report: Awaited<ReturnType<typeof callRail>>; thrown: unknown[] }> {
  const thrown: unknown[] = [];
  const observed: RailAdapter = Object.assign(Object.create(cut.adapter) as RailAdapter, {
    submit: (t: RailTransfer, signal: AbortSignal) =>
      cut.adapter.submit(t, signal).catch((error: unknown) => {
        thrown.push(error);
        throw error;
      }),
  });
  const report = await callRail(observed, transfer, cut.railTimeoutMs);
  return { report, thrown };
}

/**
 * A send the bank received and never answered: the payout path's call ends at the rail timeout and
 * the payout answers `unknown` — never a definitive outcome, never "not received" (that would let the
 * transfer go to a second rail). A later lookup finds it, and no lookup sends it again.
 */
async function hangIsReportedAsUnknown(cut: ConnectorUnderTest): Promise<void> {
  assert.ok(
    cut.railTimeoutMs > 0 && cut.railTimeoutMs <= KIT_RAIL_TIMEOUT_MAX_MS,
    `railTimeoutMs ${cut.railTimeoutMs} out of (0, ${KIT_RAIL_TIMEOUT_MAX_MS}]`,
  );
  const transfer = await arranged(cut, { kind: 'hang' });
  const { report, thrown } = await sendObserved(cut, transfer);
  const notReceived = thrown.find((error) => error instanceof RailNotReceivedError);
  assert.equal(
    notReceived,
    undefined,
    'RailNotReceivedError for a transfer the bank received: another rail could pay it again',
  );
  assert.ok(
    report.status === 'timeout' || report.status === 'error',
    `a send the bank received but never answered must end as a timeout or an error (the payout answers unknown), not ${shown(report)}`,
  );
  const received = await eventually(`the bank has received ${transfer.reference}`, async () => {
    const n = await cut.bank.submissionsOf(transfer.reference);
    return n >= 1 && n;
  });
  const found = await eventually(`a lookup finds ${transfer.reference}, which the bank received`, async () => {
    const lookup = await lookedUp(cut, transfer.reference);
    return lookup.status !== 'not_found' && lookup;
  });
  assert.ok(isPending(found) || isFinal(found), `a lookup of a received transfer: ${shown(found)}`);
  const many = await lookedUpMany(cut, [transfer.reference]);
  if (many) assert.notEqual(many[0]!.status, 'not_found', 'lookupMany does not find a transfer the bank received');
  assert.equal(await cut.bank.submissionsOf(transfer.reference), received, 'a lookup sent the transfer again');
}

/** Lookups only ask: singly, in bulk, of known and unknown references, nothing reaches the bank as a send. */
async function lookupsNeverSend(cut: ConnectorUnderTest): Promise<void> {
  const settled = await arranged(cut, { kind: 'settle' });
  const pending = await arranged(cut, { kind: 'processing' });
  await submitted(cut, settled);
  await submitted(cut, pending);
  const before = [await cut.bank.submissionsOf(settled.reference), await cut.bank.submissionsOf(pending.reference)];
  for (const reference of [settled.reference, pending.reference, randomUUID()]) {
    await lookedUp(cut, reference);
    await lookedUp(cut, reference);
  }
  await lookedUpMany(cut, [settled.reference, pending.reference]);
  const after = [await cut.bank.submissionsOf(settled.reference), await cut.bank.submissionsOf(pending.reference)];
  assert.deepEqual(after, before, 'lookups sent a transfer again (submits counted by the bank before and after)');
}

/** A reference the rail never received is `not_found`, singly and in bulk, and asking does not create it. */
async function unknownReferencesAreNotFound(cut: ConnectorUnderTest): Promise<void> {
  const unknown = [randomUUID(), randomUUID()];
  assert.deepEqual(await lookedUp(cut, unknown[0]!), { status: 'not_found' });
  const many = await lookedUpMany(cut, unknown);
  if (many) assert.deepEqual(many, [{ status: 'not_found' }, { status: 'not_found' }]);
  assert.deepEqual((await lookedUpMany(cut, [])) ?? [], []);
  for (const reference of unknown)
    assert.equal(await cut.bank.submissionsOf(reference), 0, `a lookup of ${reference} reached the bank as a send`);
}

/** lookupMany answers one status per reference, in the order asked, known and unknown mixed. */
async function lookupManyKeepsOrder(cut: ConnectorUnderTest): Promise<void> {
  if (!cut.adapter.lookupMany)
    throw new KitSkip('the adapter has no bulk lookup (lookupMany): the reaper asks one reference at a time');
  const settled = await arranged(cut, { kind: 'settle' });
  const pending = await arranged(cut, { kind: 'processing' });
  await outcomeOf(cut, settled.reference, await submitted(cut, settled));
  await submitted(cut, pending);
  const references = [randomUUID(), settled.reference, randomUUID(), pending.reference];
  const singly = await Promise.all(references.map((reference) => lookedUp(cut, reference)));
  const many = (await lookedUpMany(cut, references))!;
  assert.deepEqual(
    many.map((s) => s.status),
    ['not_found', 'settled', 'not_found', singly[3]!.status],
    `lookupMany answers in the order asked: ${shown(many)}`,
  );
  assert.ok(isPending(many[3]!), `a transfer still processing: ${shown(many[3])}`);
  assertSameTransfer(many[1]!, singly[1]!, 'lookupMany and lookup of one settled transfer');
}

/** A transfer the bank pays: settled, with the bank's reference and time, at the submit or on a lookup. */
async function settleIsSettled(cut: ConnectorUnderTest): Promise<void> {
  const transfer = await arranged(cut, { kind: 'settle' });
  const answer = await submitted(cut, transfer);
  if (!isPending(answer)) assertSettled(answer, 'the answer to a submit the bank pays');
  assertSettled(await outcomeOf(cut, transfer.reference, answer), 'a lookup of a transfer the bank paid');
}

/** A transfer the bank holds open: the submit and every lookup say so, none invents an outcome. */
async function processingStaysOpen(cut: ConnectorUnderTest): Promise<void> {
  const transfer = await arranged(cut, { kind: 'processing' });
  const answer = await submitted(cut, transfer);
  assert.ok(isPending(answer), `the answer to a submit the bank has not decided: ${shown(answer)}`);
  const lookup = await lookedUp(cut, transfer.reference);
  assert.ok(isPending(lookup), `a lookup of a transfer the bank has not decided: ${shown(lookup)}`);
  const many = await lookedUpMany(cut, [transfer.reference]);
  if (many) assert.ok(isPending(many[0]!), `lookupMany of a transfer the bank has not decided: ${shown(many[0])}`);
}

/** The bank's rejection for `reason` is answered as exactly that reason, at the submit or on a lookup. */
function failureIsAnsweredAs(reason: RailFailureReason): KitCheck {
  return async (cut) => {
    if (!cut.bank.failureReasons.includes(reason))
      throw new KitSkip(`the bank behind this adapter cannot be made to answer ${reason}`);
    const transfer = await arranged(cut, { kind: 'fail', reason });
    const answer = await submitted(cut, transfer);
    if (!isPending(answer)) assertFailedWith(answer, reason, 'the answer to the submit');
    assertFailedWith(await outcomeOf(cut, transfer.reference, answer), reason, 'a lookup');
  };
}

/**
 * A notification is handed out until it is acknowledged, with the same id each time; acknowledging is
 * idempotent; once acknowledged it is never handed out again.
 */
async function notificationsUntilAcknowledged(cut: ConnectorUnderTest): Promise<void> {
  const transfer = await arranged(cut, { kind: 'processing' });
  await submitted(cut, transfer);
  await cut.bank.notify(transfer.reference, [{ kind: 'settled' }]);
  const [notice] = await eventually("the bank's notice is handed out", async () => {
    const mine = await pendingFor(cut, transfer);
    return mine.length > 0 && mine;
  });
  assert.equal(notice!.kind, 'settled', `the notice the bank pushed: ${shown(notice)}`);
  if (notice!.kind === 'settled')
    assert.ok(notice!.bankReference !== '', 'a settled notice carries the bank reference');
  const again = await pendingFor(cut, transfer);
  assert.ok(
    again.some((n) => n.id === notice!.id),
    'a notice not acknowledged yet must be handed out again, with its id',
  );
  await acknowledged(cut, notice!.id);
  await acknowledged(cut, notice!.id);
  const after = await pendingFor(cut, transfer);
  assert.ok(!after.some((n) => n.id === notice!.id), 'an acknowledged notice was handed out again');
  await drained(cut, transfer);
}

/** A notice the bank pushes twice: handed out (once or twice), saying the same thing each time. */
async function duplicateNoticesAgree(cut: ConnectorUnderTest): Promise<void> {
  const transfer = await arranged(cut, { kind: 'processing' });
  await submitted(cut, transfer);
  await cut.bank.notify(transfer.reference, [{ kind: 'settled' }], { times: 2 });
  const seen = await eventually("the bank's duplicated notice is handed out", async () => {
    const mine = await pendingFor(cut, transfer);
    return mine.length > 0 && mine;
  });
  for (const n of seen) {
    assert.equal(n.kind, 'settled', `a duplicate of the notice the bank pushed: ${shown(n)}`);
    if (n.kind === 'settled' && seen[0]!.kind === 'settled') {
      assert.equal(n.bankReference, seen[0]!.bankReference, 'two deliveries of one notice name two bank references');
    }
  }
  await drained(cut, transfer);
}

/**
 * Notices that contradict the transfer's history (a return before its settlement, then a failure):
 * every one is handed out as the bank said it, oldest first — none dropped or mended, since we record
 * contradictions as anomalies.
 */
async function contradictoryNoticesInOrder(cut: ConnectorUnderTest): Promise<void> {
  const transfer = await arranged(cut, { kind: 'processing' });
  await submitted(cut, transfer);
  await cut.bank.notify(transfer.reference, [
    { kind: 'reversed', reason: 'returned_by_bank' },
    { kind: 'settled' },
    { kind: 'failed', reason: 'rail_rejected' },
  ]);
  const mine = await eventually('all three notices handed out', async () => {
    const pending = await pendingFor(cut, transfer);
    return new Set(pending.map((n) => n.kind)).size === 3 && pending;
  });
  assert.deepEqual(
    mine.map((n) => n.kind).filter((kind, i, kinds) => kinds.indexOf(kind) === i),
    ['reversed', 'settled', 'failed'],
    `notices are handed out in the order the bank pushed them: ${shown(mine)}`,
  );
  for (const n of mine) {
    if (n.kind === 'reversed') assert.equal(n.reason, 'returned_by_bank', 'a return notice keeps its reason');
    if (n.kind === 'failed') assert.equal(n.reason, 'rail_rejected', 'a failure notice keeps its reason');
    if (n.kind === 'settled') assert.ok(n.bankReference !== '', 'a settled notice carries the bank reference');
  }
  await drained(cut, transfer);
}

/** The bank catalogue of each instrument: complete entries the service can show and validate against. */
async function catalogueIsComplete(cut: ConnectorUnderTest): Promise<void> {
  for (const instrument of INSTRUMENTS) {
    assertCatalogue(
      await bounded(cut.adapter.banks(instrument), KIT_EVENTUALLY_MS, `banks(${instrument})`),
      instrument,
    );
  }
}

/**
 * While the bank's catalogue is down, `banks` rejects (the service serves the shipped copy) or answers
 * a complete catalogue it kept — never an empty or partial list, never no answer; after, it recovers.
 */
async function catalogueOutage(cut: ConnectorUnderTest): Promise<void> {
  if (!cut.bank.catalogueDown) throw new KitSkip('the bank behind this adapter cannot take its catalogue down');
  await cut.bank.catalogueDown(true);
  try {
    for (const instrument of INSTRUMENTS) {
      let banks: unknown;
      try {
        banks = await bounded(
          cut.adapter.banks(instrument),
          KIT_EVENTUALLY_MS,
          `banks(${instrument}) while the catalogue is down`,
        );
      } catch (error) {
        if (error instanceof assert.AssertionError) throw error;
        continue; // rejected: the documented answer to an outage
      }
      assertCatalogue(banks, instrument);
    }
  } finally {
    await cut.bank.catalogueDown(false);
  }
  await eventually('the catalogue answers again once the outage is over', async () => {
    for (const instrument of INSTRUMENTS) assertCatalogue(await cut.adapter.banks(instrument), instrument);
    return true;
  });
}

/** `health`, bounded: it must answer within KIT_HEALTH_BOUND_MS and never throw. */
async function healthOf(cut: ConnectorUnderTest): Promise<RailHealth> {
  try {
    return await bounded(
      cut.adapter.health(AbortSignal.timeout(KIT_HEALTH_BOUND_MS)),
      KIT_HEALTH_BOUND_MS * 2,
      'health',
    );
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    throw new assert.AssertionError({ message: `health must never throw: ${(error as Error).message}` });
  }
}

/** A bank that answers is healthy. */
async function healthWhenUp(cut: ConnectorUnderTest): Promise<void> {
  assert.deepEqual(await healthOf(cut), { ok: true });
}

/**
 * An unreachable bank: `health` says so, and a submit throws RailNotReceivedError (the one failure
 * after which another rail may be tried) — and the bank indeed has nothing. Once reachable, the same
 * reference is sent and paid.
 */
async function unreachableIsNotReceived(cut: ConnectorUnderTest): Promise<void> {
  if (!cut.bank.unreachable) throw new KitSkip('the bank behind this adapter cannot be made unreachable');
  const transfer = await arranged(cut, { kind: 'settle' });
  await cut.bank.unreachable(true);
  try {
    const health = await healthOf(cut);
    assert.equal(health.ok, false, `health of an unreachable bank: ${shown(health)}`);
    if (!health.ok) assert.ok(health.message !== '', 'an unhealthy rail says why');
    const controller = new AbortController();
    const sent = bounded(
      cut.adapter.submit(transfer, controller.signal),
      KIT_EVENTUALLY_MS,
      'submit to an unreachable bank',
    );
    await assert.rejects(
      sent,
      (error) => error instanceof RailNotReceivedError,
      'a submit to an unreachable bank throws RailNotReceivedError',
    );
    controller.abort();
  } finally {
    await cut.bank.unreachable(false);
  }
  assert.equal(
    await cut.bank.submissionsOf(transfer.reference),
    0,
    'RailNotReceivedError, yet the bank received the transfer',
  );
  await eventually('health recovers once the bank is reachable', async () => (await healthOf(cut)).ok);
  const answer = await submitted(cut, transfer);
  assertSettled(await outcomeOf(cut, transfer.reference, answer), 'the transfer sent once the bank is reachable');
}

/** Every case of the kit, by title, in the order the suite runs them. */
const KIT_CASES: ReadonlyArray<readonly [string, KitCheck]> = [
  ['a second submit of one reference is the same transfer with the same answer', duplicateSubmitIsOneTransfer],
  ['concurrent submits of one reference are one transfer', concurrentSubmitsAreOneTransfer],
  ['a send the bank never answers is a timeout, found later by a lookup, never re-sent', hangIsReportedAsUnknown],
  ['lookups never send, singly or in bulk', lookupsNeverSend],
  ['an unknown reference is not_found, singly and in bulk', unknownReferencesAreNotFound],
  ['lookupMany answers in order, known and unknown mixed', lookupManyKeepsOrder],
  ['a transfer the bank pays is settled with its bank reference', settleIsSettled],
  ['a transfer the bank has not decided stays processing', processingStaysOpen],
  ...RAIL_FAILURE_REASONS.map(
    (reason) => [`a rejection for ${reason} is answered as ${reason}`, failureIsAnsweredAs(reason)] as const,
  ),
  ['a notification is handed out until acknowledged; acknowledging is idempotent', notificationsUntilAcknowledged],
  ['a notification pushed twice says the same thing each time', duplicateNoticesAgree],
  ['notifications out of order are all handed out, oldest first', contradictoryNoticesInOrder],
  ['the bank catalogue of each instrument is complete', catalogueIsComplete],
  ['a catalogue outage rejects or serves a complete copy, and recovers', catalogueOutage],
  ['health is ok when the bank answers', healthWhenUp],
  ['an unreachable bank: health says so and a submit is provably not received', unreachableIsNotReceived],
  ...ANSWER_CHECK_CASES,
  ...STATEMENT_CASES,
];

/** Every check on its own, to run against one adapter directly (the broken-adapter test does). */
export const kitChecks = {
  duplicateSubmitIsOneTransfer,
  concurrentSubmitsAreOneTransfer,
  hangIsReportedAsUnknown,
  lookupsNeverSend,
  unknownReferencesAreNotFound,
  lookupManyKeepsOrder,
  settleIsSettled,
  processingStaysOpen,
  failureIsAnsweredAs,
  notificationsUntilAcknowledged,
  duplicateNoticesAgree,
  contradictoryNoticesInOrder,
  catalogueIsComplete,
  catalogueOutage,
  healthWhenUp,
  unreachableIsNotReceived,
} as const;

/**
 * Declares the kit as a node:test suite for one adapter. `factory` makes a fresh adapter and bank for
 * each case; the case closes them.
 */
export function connectorKit(name: string, factory: () => Promise<ConnectorUnderTest>): void {
  describe(`connector kit: ${name}`, () => {
    for (const [title, check] of KIT_CASES) {
      it(title, { timeout: KIT_CASE_TIMEOUT_MS }, async (t) => {
        const cut = await factory();
        try {
          await check(cut);
        } catch (error) {
          if (!(error instanceof KitSkip)) throw error;
          t.skip(error.message);
        } finally {
          await cut.close();
        }
      });
    }
  });
}
