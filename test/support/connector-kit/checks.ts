// What the connector kit's checks share: the transfers it makes, bounded calls to the adapter, and the
// assertions about what a rail answers. Every wait here has a bound and fails as an AssertionError
// saying what never happened, so a check run directly (the broken-adapter test) fails the same way it
// fails inside the kit.

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { RailFailureReason } from '../../../src/domain/failure-reasons.ts';
import type { Instrument } from '../../../src/domain/instrument.ts';
import type { Bank } from '../../../src/rails/catalogue.ts';
import type { RailLookup, RailNotification, RailStatus, RailTransfer } from '../../../src/rails/rail.ts';
import { until } from '../until.ts';
import type { BankScenario, ConnectorUnderTest } from './bank-control.ts';

/**
 * How long the kit waits for what a bank does on its own time (a callback delivered, a decision
 * reached, one call answered on a busy machine). Generous on purpose: every wait ends as soon as its
 * condition holds, so the bound costs nothing when the adapter is right.
 */
export const KIT_EVENTUALLY_MS = 10_000;
/** Notifications the kit asks for at once: as many as the reaper asks for per pass. */
const KIT_NOTIFICATIONS_LIMIT = 100;

/** A case the bank behind the adapter cannot play: reported as skipped with this reason, never passed. */
export class KitSkip extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'KitSkip';
  }
}

/** A value for a failure message: bigints and dates as text. */
export function shown(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));
}

/** `promise`, or an AssertionError once `ms` have passed without an answer. */
export async function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new assert.AssertionError({ message: `${what}: no answer within ${ms} ms` })), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The first truthy value of `probe` within KIT_EVENTUALLY_MS, else an AssertionError naming `what`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  detail?: () => string,
): Promise<T> {
  try {
    return await until(what, probe, { timeoutMs: KIT_EVENTUALLY_MS, detail });
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    throw new assert.AssertionError({ message: (error as Error).message });
  }
}

/** A transfer the kit has not used yet (a new reference), shaped so the bank plays `scenario` for it. */
export async function arranged(
  cut: ConnectorUnderTest,
  scenario: BankScenario,
  instrument: Instrument = 'pago_movil',
): Promise<RailTransfer> {
  const transfer: RailTransfer = {
    reference: randomUUID(),
    tenantId: randomUUID(),
    mode: cut.mode,
    instrument,
    amountMinor: 125_000n,
    asset: 'BS',
    beneficiary: {
      fullName: 'María Pérez',
      nationalId: 'V12345678',
      bankCode: '0102',
      accountNumber: instrument === 'transferencia' ? '01020100000000000001' : null,
      phone: instrument === 'pago_movil' ? '04141234567' : null,
    },
    sender: {
      nationalId: 'V87654321',
      nationality: 'VEN',
      firstName: 'José',
      lastName: 'García',
      phone: '+584141112233',
      email: 'jose@example.com',
    },
  };
  const played = await cut.bank.arrange(transfer, scenario);
  assert.equal(played.reference, transfer.reference, 'BankControl.arrange must keep the reference');
  return played;
}

/** The adapter's answer to a submit the bank answers (bounded); throwing is a failure of the check. */
export async function submitted(cut: ConnectorUnderTest, transfer: RailTransfer): Promise<RailStatus> {
  const controller = new AbortController();
  try {
    return await bounded(
      cut.adapter.submit(transfer, controller.signal),
      KIT_EVENTUALLY_MS,
      `submit of ${transfer.reference}`,
    );
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    throw new assert.AssertionError({ message: `submit of ${transfer.reference} threw: ${(error as Error).message}` });
  } finally {
    controller.abort();
  }
}

export function lookedUp(cut: ConnectorUnderTest, reference: string): Promise<RailLookup> {
  return bounded(cut.adapter.lookup(reference, cut.mode), KIT_EVENTUALLY_MS, `lookup of ${reference}`);
}

/** The bulk lookup's answers, checked to be one per reference; undefined when the adapter has none. */
export async function lookedUpMany(
  cut: ConnectorUnderTest,
  references: readonly string[],
): Promise<RailLookup[] | undefined> {
  if (!cut.adapter.lookupMany) return undefined;
  const answers = await bounded(
    cut.adapter.lookupMany(references, cut.mode),
    KIT_EVENTUALLY_MS,
    `lookupMany of ${references.length}`,
  );
  assert.equal(
    answers.length,
    references.length,
    `lookupMany must answer once per reference, in order: ${shown(answers)}`,
  );
  return answers;
}

export const isPending = (s: RailLookup): boolean => s.status === 'processing' || s.status === 'unconfirmed';
export const isFinal = (s: RailLookup): boolean =>
  s.status === 'settled' || s.status === 'failed' || s.status === 'reversed';

/**
 * What the rail ends up saying about a transfer it answered `answer` to: looked up once the bank has
 * decided (told to, when the bank needs telling). A final answer must be what the lookup says too.
 */
export async function outcomeOf(cut: ConnectorUnderTest, reference: string, answer: RailStatus): Promise<RailLookup> {
  if (isPending(answer)) await cut.bank.decide?.(reference);
  let last: RailLookup | undefined;
  const outcome = await eventually(
    `a lookup of ${reference} answers its outcome`,
    async () => {
      last = await lookedUp(cut, reference);
      return isFinal(last) && last;
    },
    () => `last lookup: ${shown(last)}`,
  );
  if (isFinal(answer)) assertSameTransfer(answer, outcome, 'the answer to the submit and a later lookup');
  return outcome;
}

/**
 * Two things the rail said about one reference describe one transfer: never two different outcomes,
 * never two bank references. A pending answer agrees with anything (the transfer moved on).
 */
export function assertSameTransfer(a: RailLookup, b: RailLookup, what: string): void {
  assert.notEqual(a.status, 'not_found', `${what}: the rail does not know a transfer it answered`);
  assert.notEqual(b.status, 'not_found', `${what}: the rail does not know a transfer it answered`);
  if (isPending(a) || isPending(b)) return;
  const bankReference = (s: RailLookup) => ('bankReference' in s ? s.bankReference : undefined);
  const settledBoth =
    (a.status === 'settled' || a.status === 'reversed') && (b.status === 'settled' || b.status === 'reversed');
  assert.ok(settledBoth || a.status === b.status, `${what} name two outcomes: ${shown(a)} and ${shown(b)}`);
  if (a.status === 'failed' && b.status === 'failed')
    assert.equal(a.reason, b.reason, `${what} name two failure reasons`);
  assert.equal(
    bankReference(a),
    bankReference(b),
    `${what} name two bank references (two transfers?): ${shown(a)} and ${shown(b)}`,
  );
}

export function assertSettled(status: RailLookup, what: string): void {
  assert.equal(status.status, 'settled', `${what}: ${shown(status)}`);
  if (status.status !== 'settled') return;
  assert.ok(
    typeof status.bankReference === 'string' && status.bankReference !== '',
    `${what}: a settlement carries the bank reference`,
  );
  assert.ok(
    status.settledAt instanceof Date && !Number.isNaN(status.settledAt.getTime()),
    `${what}: a settlement carries its time`,
  );
}

export function assertFailedWith(status: RailLookup, reason: RailFailureReason, what: string): void {
  assert.equal(status.status, 'failed', `${what}: expected failed (${reason}), got ${shown(status)}`);
  if (status.status === 'failed')
    assert.equal(status.reason, reason, `${what}: the bank's rejection must be answered as our reason`);
}

/** A catalogue the service can use: not empty, every entry complete, one entry per code. */
export function assertCatalogue(banks: unknown, instrument: Instrument): asserts banks is Bank[] {
  assert.ok(
    Array.isArray(banks) && banks.length > 0,
    `banks(${instrument}) must list the banks it reaches, not ${shown(banks)}`,
  );
  for (const bank of banks as Bank[]) {
    assert.match(bank.code, /^[0-9]{4}$/, `banks(${instrument}): a code is 4 digits: ${shown(bank)}`);
    assert.ok(
      typeof bank.name === 'string' && bank.name !== '',
      `banks(${instrument}): every bank has its name: ${shown(bank)}`,
    );
    assert.ok(
      typeof bank.shortName === 'string' && bank.shortName !== '',
      `banks(${instrument}): every bank has its short name: ${shown(bank)}`,
    );
  }
  const codes = (banks as Bank[]).map((bank) => bank.code);
  assert.equal(new Set(codes).size, codes.length, `banks(${instrument}): a code is listed once`);
}

/**
 * The adapter's pending notifications about `transfer`, after checking the whole list is handed out
 * oldest first and each of them names the transfer as it was sent.
 */
export async function pendingFor(cut: ConnectorUnderTest, transfer: RailTransfer): Promise<RailNotification[]> {
  const all = await bounded(
    cut.adapter.pendingNotifications(KIT_NOTIFICATIONS_LIMIT),
    KIT_EVENTUALLY_MS,
    'pendingNotifications',
  );
  assert.ok(
    all.length <= KIT_NOTIFICATIONS_LIMIT,
    `pendingNotifications(${KIT_NOTIFICATIONS_LIMIT}) handed out ${all.length}`,
  );
  for (let i = 1; i < all.length; i += 1) {
    assert.ok(
      all[i - 1]!.occurredAt.getTime() <= all[i]!.occurredAt.getTime(),
      `notifications are handed out oldest first: ${shown(all)}`,
    );
  }
  const mine = all.filter((n) => n.reference === transfer.reference);
  for (const n of mine) {
    assert.ok(typeof n.id === 'string' && n.id !== '', `a notification has an id: ${shown(n)}`);
    assert.ok(
      n.occurredAt instanceof Date && !Number.isNaN(n.occurredAt.getTime()),
      `a notification has its time: ${shown(n)}`,
    );
    if (n.tenantId !== undefined)
      assert.equal(
        n.tenantId.toLowerCase(),
        transfer.tenantId.toLowerCase(),
        'a notification names the tenant the transfer was sent with',
      );
    if (n.mode !== undefined)
      assert.equal(n.mode, transfer.mode, 'a notification names the mode the transfer was sent with');
  }
  return mine;
}

export function acknowledged(cut: ConnectorUnderTest, id: string): Promise<void> {
  return bounded(cut.adapter.acknowledgeNotification(id), KIT_EVENTUALLY_MS, `acknowledgeNotification(${id})`);
}

/** Acknowledges every notification about `transfer` until none is left (a bank may still be delivering). */
export async function drained(cut: ConnectorUnderTest, transfer: RailTransfer): Promise<void> {
  await eventually(`every notification about ${transfer.reference} acknowledged`, async () => {
    const left = await pendingFor(cut, transfer);
    for (const n of left) await acknowledged(cut, n.id);
    return left.length === 0;
  });
}
