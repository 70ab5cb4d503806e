// An in-memory rail for tests about the CALLER of rails (routing, failover, the reaper's choice of
// rail): it records what it received and answers as the test says. Not a stand-in for a real rail's
// behaviour (the connector kit tests those).
import type { Bank } from '../../src/rails/catalogue.ts';
import {
  RailNotReceivedError,
  type RailAdapter,
  type RailHealth,
  type RailLookup,
  type RailNotification,
  type RailStatus,
  type RailTransfer,
} from '../../src/rails/rail.ts';

/** ok: receives and answers `answer`; refuse: provably does not receive (connection refused); hang: receives, never answers. */
export type FixtureBehaviour = 'ok' | 'refuse' | 'hang';

export class FixtureRail implements RailAdapter {
  behaviour: FixtureBehaviour = 'ok';
  healthy = true;
  /** What a received transfer's status is at first. */
  answer: RailStatus = { status: 'processing' };
  /** Every submit call that reached the bank, by reference (a duplicate submit of one reference counts twice here, once at the bank). */
  readonly received: string[] = [];
  /** Every lookup asked, by reference. */
  readonly lookups: string[] = [];
  /** What the bank holds: one transfer per reference. */
  readonly transfers = new Map<string, { transfer: RailTransfer; status: RailStatus }>();

  constructor(
    readonly name: string,
    readonly modes: readonly ('test' | 'live')[] = ['live'],
  ) {}

  async instrumentAvailable(): Promise<boolean> {
    return true;
  }

  submit(transfer: RailTransfer): Promise<RailStatus> {
    if (this.behaviour === 'refuse')
      return Promise.reject(new RailNotReceivedError(`${this.name}: connect ECONNREFUSED`));
    this.received.push(transfer.reference);
    const held = this.transfers.get(transfer.reference) ?? { transfer, status: this.answer };
    this.transfers.set(transfer.reference, held);
    if (this.behaviour === 'hang') return new Promise(() => undefined);
    return Promise.resolve(held.status);
  }

  async lookup(reference: string): Promise<RailLookup> {
    this.lookups.push(reference);
    if (this.behaviour === 'refuse') throw new Error(`${this.name}: connect ECONNREFUSED`);
    return this.transfers.get(reference)?.status ?? { status: 'not_found' };
  }

  /** The bank settles a transfer it holds. */
  settle(reference: string): void {
    const held = this.transfers.get(reference);
    if (!held) throw new Error(`${this.name} holds no transfer ${reference}`);
    held.status = { status: 'settled', bankReference: '123456789012', settledAt: new Date() };
  }

  async pendingNotifications(): Promise<RailNotification[]> {
    return [];
  }

  async acknowledgeNotification(): Promise<void> {}

  async banks(): Promise<Bank[]> {
    return [];
  }

  async health(): Promise<RailHealth> {
    return this.healthy ? { ok: true } : { ok: false, message: `${this.name} is down` };
  }
}
