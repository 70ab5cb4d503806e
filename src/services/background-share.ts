import { assert } from '../domain/assert.ts';
/**
 * Requests come first. Background work runs in units — the transaction of an outcome the reaper or a
 * bank's notification brought, the transaction of a payout batch's items, a turn of a batch's
 * preparation — and while a request is in flight anywhere in this process, at most
 * BACKGROUND_UNITS_BESIDE_REQUESTS units run at once; with none, up to BACKGROUND_UNITS_MAX. On a
 * small machine the process and PostgreSQL share few cores: left unbounded, one tenant's payroll file
 * (its items' transactions, the reaper settling them) takes them all and every other tenant's payout
 * waits behind it. Bounded, the background keeps moving (a unit always runs) and a request waits
 * behind at most one unit; a unit let in after a wait starts on a turn of the event loop of its own,
 * so the requests' I/O waiting meanwhile is served first.
 *
 * A unit is leaf work: it never waits for another unit (the share would deadlock) nor for a peer on
 * the network (a slow bank or webhook receiver would hold everyone's share).
 */
const BACKGROUND_UNITS_BESIDE_REQUESTS = 1;
/** With no request in flight: the background's units at once (more than the committer's transactions). */
const BACKGROUND_UNITS_MAX = 64;

export class BackgroundShare {
  private requests = 0;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly besideRequests = BACKGROUND_UNITS_BESIDE_REQUESTS,
    private readonly max = BACKGROUND_UNITS_MAX,
  ) {
    assert(besideRequests >= 1 && max >= besideRequests, 'the background share must let a unit run');
  }

  /** A request began; `requestEnded` must follow exactly once. */
  requestStarted(): void {
    this.requests += 1;
  }

  requestEnded(): void {
    assert(this.requests > 0, 'a request ended that had not started');
    this.requests -= 1;
    this.admit();
  }

  /** Requests in flight, units running and waiting: for tests and the metrics. */
  get state(): { requests: number; running: number; waiting: number } {
    return { requests: this.requests, running: this.running, waiting: this.waiting.length };
  }

  /** Runs one unit of background work within the share, in arrival order. */
  async run<T>(unit: () => Promise<T>): Promise<T> {
    if (this.waiting.length === 0 && this.running < this.limit()) this.running += 1;
    // admit() counts the unit as running when it lets it in.
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await unit();
    } finally {
      this.running -= 1;
      this.admit();
    }
  }

  /**
   * A turn of CPU-bound background work (a slice of a batch's items): waits for the share, lets the
   * event loop serve what waits, and returns; the caller then runs its slice.
   */
  turn(): Promise<void> {
    return this.run(() => new Promise<void>((resolve) => setImmediate(resolve)));
  }

  private limit(): number {
    return this.requests > 0 ? this.besideRequests : this.max;
  }

  private admit(): void {
    while (this.waiting.length > 0 && this.running < this.limit()) {
      this.running += 1;
      setImmediate(this.waiting.shift()!);
    }
  }
}
