// The connector kit fails an adapter that breaks its contract. Each fixture wraps the sandbox rail and
// breaks one promise the way a real connector gets it wrong; the kit's check for that promise must
// reject it with an AssertionError saying what broke, while the same check passes on the sandbox rail
// itself (so the failure is the defect's, not the database's or the machine's).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { migrate } from '../../src/db/migrate.ts';
import type { Instrument } from '../../src/domain/instrument.ts';
import {
  RailNotReceivedError,
  type RailAdapter,
  type RailLookup,
  type RailStatus,
  type RailTransfer,
} from '../../src/rails/rail.ts';
import { createTestDatabase, ENGINE, type TestDatabase } from '../support/harness.ts';
import type { ConnectorUnderTest } from '../support/connector-kit/bank-control.ts';
import { kitChecks, type KitCheck } from '../support/connector-kit/kit.ts';
import { sandboxConnector } from '../support/connector-kit/sandbox-bank.ts';

const {
  concurrentSubmitsAreOneTransfer,
  duplicateSubmitIsOneTransfer,
  hangIsReportedAsUnknown,
  lookupsNeverSend,
  notificationsUntilAcknowledged,
  settleIsSettled,
} = kitChecks;

/** Passes everything through to the adapter it wraps; each fixture overrides what it gets wrong. */
class Wrapped implements RailAdapter {
  readonly name: string;
  constructor(protected readonly inner: RailAdapter) {
    this.name = `${inner.name}-broken`;
  }
  instrumentAvailable(beneficiary: RailTransfer['beneficiary'], instrument: Instrument, requested: Instrument) {
    return this.inner.instrumentAvailable(beneficiary, instrument, requested);
  }
  submit(transfer: RailTransfer, signal: AbortSignal): Promise<RailStatus> {
    return this.inner.submit(transfer, signal);
  }
  lookup(reference: string, mode: 'test' | 'live'): Promise<RailLookup> {
    return this.inner.lookup(reference, mode);
  }
  lookupMany(references: readonly string[], mode: 'test' | 'live'): Promise<RailLookup[]> {
    return this.inner.lookupMany!(references, mode);
  }
  pendingNotifications(limit: number) {
    return this.inner.pendingNotifications(limit);
  }
  acknowledgeNotification(id: string) {
    return this.inner.acknowledgeNotification(id);
  }
  banks(instrument: Instrument) {
    return this.inner.banks(instrument);
  }
  health(signal: AbortSignal) {
    return this.inner.health(signal);
  }
}

/** "Makes sure" the bank has a transfer by submitting it again whenever it is asked about it. */
class ResendsOnLookup extends Wrapped {
  private readonly sent = new Map<string, RailTransfer>();
  override submit(transfer: RailTransfer, signal: AbortSignal): Promise<RailStatus> {
    this.sent.set(transfer.reference, transfer);
    return this.inner.submit(transfer, signal);
  }
  override async lookup(reference: string, mode: 'test' | 'live'): Promise<RailLookup> {
    const transfer = this.sent.get(reference);
    if (transfer) await this.inner.submit(transfer, new AbortController().signal);
    return this.inner.lookup(reference, mode);
  }
  override lookupMany(references: readonly string[], mode: 'test' | 'live'): Promise<RailLookup[]> {
    return Promise.all(references.map((reference) => this.lookup(reference, mode)));
  }
}

/** Gives up before the payout path does and calls what it did not hear back about a rejection. */
class TimeoutAsFailure extends Wrapped {
  constructor(
    inner: RailAdapter,
    private readonly ownTimeoutMs: number,
  ) {
    super(inner);
  }
  override async submit(transfer: RailTransfer, signal: AbortSignal): Promise<RailStatus> {
    try {
      return await this.inner.submit(transfer, AbortSignal.any([signal, AbortSignal.timeout(this.ownTimeoutMs)]));
    } catch (error) {
      if (signal.aborted) throw error;
      return { status: 'failed', reason: 'rail_rejected', message: 'the gateway timed out' };
    }
  }
}

/** Calls a send it did not hear back about "not received": another rail could then pay it again. */
class TimeoutAsNotReceived extends Wrapped {
  constructor(
    inner: RailAdapter,
    private readonly ownTimeoutMs: number,
  ) {
    super(inner);
  }
  override async submit(transfer: RailTransfer, signal: AbortSignal): Promise<RailStatus> {
    try {
      return await this.inner.submit(transfer, AbortSignal.any([signal, AbortSignal.timeout(this.ownTimeoutMs)]));
    } catch (error) {
      if (signal.aborted) throw error;
      throw new RailNotReceivedError('the gateway did not answer', { cause: error });
    }
  }
}

/** Sends a submit it has seen before under a key of its own: a duplicate becomes a second payment. */
class SendsDuplicateAgain extends Wrapped {
  private readonly seen = new Set<string>();
  override submit(transfer: RailTransfer, signal: AbortSignal): Promise<RailStatus> {
    const again = this.seen.has(transfer.reference);
    this.seen.add(transfer.reference);
    return this.inner.submit(again ? { ...transfer, reference: randomUUID() } : transfer, signal);
  }
}

/** Hands each notification out once and forgets it: acknowledged before anyone has recorded it. */
class ForgetsHandedOutNotifications extends Wrapped {
  override async pendingNotifications(limit: number) {
    const notifications = await this.inner.pendingNotifications(limit);
    for (const notification of notifications) await this.inner.acknowledgeNotification(notification.id);
    return notifications;
  }
}

/** An AssertionError of the kit whose message says what broke. */
const kitFailure = (what: RegExp) => (error: unknown) => {
  assert.ok(error instanceof assert.AssertionError, `the kit fails with an AssertionError, not ${String(error)}`);
  assert.match(error.message, what);
  return true;
};

describe(`the connector kit fails broken adapters on ${ENGINE}`, () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
    await migrate(database.db);
  });
  after(async () => {
    await database.drop();
  });

  async function broken(
    make: (inner: RailAdapter, cut: ConnectorUnderTest) => RailAdapter,
  ): Promise<ConnectorUnderTest> {
    const cut = await sandboxConnector(database.db);
    return { ...cut, adapter: make(cut.adapter, cut) };
  }

  /** The check passes on the sandbox rail and fails, saying `what`, on the broken adapter. */
  async function catches(check: KitCheck, make: Parameters<typeof broken>[0], what: RegExp): Promise<void> {
    await check(await sandboxConnector(database.db));
    await assert.rejects(check(await broken(make)), kitFailure(what));
  }

  it('an adapter that re-sends on lookup fails "lookups never send" and the hang case', async () => {
    const make = (inner: RailAdapter) => new ResendsOnLookup(inner);
    await catches(lookupsNeverSend, make, /lookups sent a transfer again/);
    await catches(hangIsReportedAsUnknown, make, /a lookup sent the transfer again/);
    // Only that: where no lookup's sends are counted, it passes (the fixture is broken in one way).
    await settleIsSettled(await broken(make));
  });

  it('an adapter that reports a timeout as a rejection fails the hang case', async () => {
    const make = (inner: RailAdapter, cut: ConnectorUnderTest) => new TimeoutAsFailure(inner, cut.railTimeoutMs / 2);
    await catches(hangIsReportedAsUnknown, make, /must end as a timeout or an error/);
    await settleIsSettled(await broken(make));
  });

  it('an adapter that reports a timeout as "not received" fails the hang case', async () => {
    const make = (inner: RailAdapter, cut: ConnectorUnderTest) =>
      new TimeoutAsNotReceived(inner, cut.railTimeoutMs / 2);
    await catches(hangIsReportedAsUnknown, make, /RailNotReceivedError for a transfer the bank received/);
    await settleIsSettled(await broken(make));
  });

  it('an adapter that forgets a notification once handed out fails the at-least-once case', async () => {
    const make = (inner: RailAdapter) => new ForgetsHandedOutNotifications(inner);
    await catches(notificationsUntilAcknowledged, make, /a notice not acknowledged yet must be handed out again/);
    await settleIsSettled(await broken(make));
  });

  it('an adapter that sends a duplicate submit again fails both duplicate cases', async () => {
    const make = (inner: RailAdapter) => new SendsDuplicateAgain(inner);
    await catches(duplicateSubmitIsOneTransfer, make, /two submits of one reference name two bank references/);
    await catches(
      concurrentSubmitsAreOneTransfer,
      make,
      /concurrent submits of one reference name two bank references/,
    );
    await settleIsSettled(await broken(make));
  });
});
