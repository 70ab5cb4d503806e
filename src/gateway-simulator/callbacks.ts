// The simulator's callbacks to the service: each event POSTed signed to the configured URL, in order,
// retried (bounded) until a 2xx. Switchable faults: every event sent several times (duplicates), held
// and released in reverse order (reordered), signed with a wrong secret (a forgery to be refused).
// The queue is in memory: callbacks not yet delivered when the process is killed are lost (the
// service's status questions still find every outcome).
import { randomUUID } from 'node:crypto';
import { signRailMessage, type RailKey } from '../domain/rail-signature.ts';
import type { GatewayCallback, GatewayTransfer } from '../rails/http-bank/protocol.ts';

/** Attempts per delivery before it is dropped (counted in `dropped`). */
const CALLBACK_ATTEMPTS_MAX = 10;
/** First wait between attempts; doubled each time up to CALLBACK_BACKOFF_MAX_MS. */
const CALLBACK_BACKOFF_MS = 100;
const CALLBACK_BACKOFF_MAX_MS = 2000;
/** Bound of one delivery attempt. */
const CALLBACK_TIMEOUT_MS = 5000;
/** Deliveries waiting at most; past it new ones are dropped (counted). */
const CALLBACK_QUEUE_MAX = 10_000;
/** The secret a forged callback is signed with: no configured key has it. */
const FORGED_SECRET = 'not-the-gateway-callback-secret-0000';

export interface CallbackFaults {
  /** Each event delivered this many times (same event id). */
  duplicate: number;
  /** Events queue up unsent until `release`. */
  hold: boolean;
  /** Events are signed with a secret the service does not know. */
  badSignature: boolean;
}

export class CallbackSender {
  url: string | undefined;
  readonly faults: CallbackFaults = { duplicate: 1, hold: false, badSignature: false };
  readonly counters = { queued: 0, delivered: 0, refused: 0, dropped: 0 };
  private queue: GatewayCallback[] = [];
  private held: GatewayCallback[] = [];
  private running = false;
  private stopped = false;
  /** The last event time given: each event's time is later, so events sort in the order they happened. */
  private lastOccurredMs = 0;

  constructor(
    private readonly key: RailKey,
    url: string | undefined,
  ) {
    this.url = url;
  }

  /** Queues a callback about `transfer` (its status now), delivered `times` times (one event id). */
  send(transfer: GatewayTransfer, occurredAt: Date, times = this.faults.duplicate): void {
    // Two events in one millisecond would tie on their time, and a receiver ordering by it could not
    // tell which came first: the later one is a millisecond later.
    this.lastOccurredMs = Math.max(occurredAt.getTime(), this.lastOccurredMs + 1);
    const event: GatewayCallback = {
      eventId: `evt_${randomUUID()}`,
      occurredAt: new Date(this.lastOccurredMs).toISOString(),
      transfer,
    };
    const copies = Array.from({ length: Math.max(1, times) }, () => event);
    if (this.faults.hold) this.held.push(...copies);
    else this.enqueue(copies);
  }

  /** Sends what `hold` kept, in the order given ('reverse': newest first). */
  release(order: 'fifo' | 'reverse'): number {
    const released = order === 'reverse' ? [...this.held].reverse() : this.held;
    this.held = [];
    this.enqueue(released);
    return released.length;
  }

  get pending(): number {
    return this.queue.length + this.held.length;
  }

  stop(): void {
    this.stopped = true;
  }

  private enqueue(events: GatewayCallback[]): void {
    for (const event of events) {
      if (this.queue.length >= CALLBACK_QUEUE_MAX) this.counters.dropped += 1;
      else {
        this.queue.push(event);
        this.counters.queued += 1;
      }
    }
    if (!this.running) void this.drain();
  }

  /** One delivery at a time, in queue order: a reorder is only what the test asked for. */
  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (!this.stopped && this.queue.length > 0) {
        const event = this.queue.shift()!;
        const delivered = await this.deliver(event);
        if (delivered) this.counters.delivered += 1;
        else this.counters.dropped += 1;
      }
    } finally {
      this.running = false;
    }
  }

  private async deliver(event: GatewayCallback): Promise<boolean> {
    let waitMs = CALLBACK_BACKOFF_MS;
    for (let attempt = 1; attempt <= CALLBACK_ATTEMPTS_MAX && !this.stopped; attempt += 1) {
      const result = this.url === undefined ? 'retry' : await this.attempt(this.url, event);
      if (result !== 'retry') return result === 'delivered';
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      waitMs = Math.min(CALLBACK_BACKOFF_MAX_MS, waitMs * 2);
    }
    return false;
  }

  /** One POST: delivered (2xx), refused (4xx: the receiver will not take it, retrying changes nothing), or retry. */
  private async attempt(url: string, event: GatewayCallback): Promise<'delivered' | 'refused' | 'retry'> {
    const body = JSON.stringify(event);
    const key = this.faults.badSignature ? { id: this.key.id, secret: FORGED_SECRET } : this.key;
    try {
      const answer = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signRailMessage(key, body, Date.now()) },
        body,
        signal: AbortSignal.timeout(CALLBACK_TIMEOUT_MS),
      });
      await answer.arrayBuffer();
      if (answer.status >= 200 && answer.status < 300) return 'delivered';
      if (answer.status >= 400 && answer.status < 500 && answer.status !== 429) {
        this.counters.refused += 1;
        return 'refused';
      }
      return 'retry';
    } catch {
      return 'retry';
    }
  }
}
