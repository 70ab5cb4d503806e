import { overloaded } from '../domain/errors.ts';
import { assert } from '../domain/assert.ts';

export interface CoalescerOptions {
  /** Items per statement, at most. */
  batchMax: number;
  /** Statements in flight at once, at most. */
  inFlightMax: number;
  /** Items waiting, at most: past it `submit` fails at once with 503 `overloaded`. */
  queueMax: number;
}

/** The bounds every coalesced statement of the service uses. */
export const COALESCER_BOUNDS: CoalescerOptions = { batchMax: 256, inFlightMax: 2, queueMax: 4096 };

/**
 * Natural batching for one kind of statement: calls that arrive while a batch is running wait and
 * run together in the next one (a single multi-row statement), so under load N concurrent requests
 * cost one round trip instead of N, and when idle a call runs at once, alone. No timer, no delay.
 * Bounded: a full queue refuses new items instead of growing.
 */
export class Coalescer<In, Out> {
  private queue: Array<{ item: In; resolve(out: Out): void; reject(error: unknown): void }> = [];
  private inFlight = 0;

  constructor(
    private readonly run: (items: In[]) => Promise<Out[]>,
    private readonly options: CoalescerOptions,
  ) {}

  submit(item: In): Promise<Out> {
    if (this.queue.length >= this.options.queueMax) return Promise.reject(overloaded('statement queue full'));
    const result = new Promise<Out>((resolve, reject) => this.queue.push({ item, resolve, reject }));
    this.pump();
    return result;
  }

  private pump(): void {
    while (this.queue.length > 0 && this.inFlight < this.options.inFlightMax) {
      const batch = this.queue.splice(0, this.options.batchMax);
      this.inFlight += 1;
      void this.execute(batch).finally(() => {
        this.inFlight -= 1;
        this.pump();
      });
    }
  }

  private async execute(
    batch: Array<{ item: In; resolve(out: Out): void; reject(error: unknown): void }>,
  ): Promise<void> {
    try {
      const outputs = await this.run(batch.map((entry) => entry.item));
      assert(outputs.length === batch.length, `a batch of ${batch.length} produced ${outputs.length} results`);
      batch.forEach((entry, i) => entry.resolve(outputs[i]!));
    } catch (error) {
      batch.forEach((entry) => entry.reject(error));
    }
  }
}
