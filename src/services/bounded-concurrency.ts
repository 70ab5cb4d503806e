import { assert } from '../domain/assert.ts';
// Work over many items with a named bound on how many run at once: the reaper's questions to a rail,
// the rail notifications it applies, a payout batch's preparation of its items and its payouts in the
// committer.

/**
 * `work` over `items` with at most `concurrency` at once; the results in item order. `afterEach`, when
 * given, runs after each item's work, before that runner takes the next item (a payout batch yields a
 * turn of the background share there).
 */
export async function mapBounded<T, R>(
  items: readonly T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<R>,
  afterEach?: (index: number) => Promise<void>,
): Promise<R[]> {
  assert(
    Number.isSafeInteger(concurrency) && concurrency >= 1,
    `concurrency must be a positive integer, got ${concurrency}`,
  );
  const results = new Array<R>(items.length);
  let next = 0;
  const runners = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await work(items[index]!, index);
      if (afterEach) await afterEach(index);
    }
  });
  await Promise.all(runners);
  return results;
}

/** `work` over `items` with at most `concurrency` at once; `work` must not throw. */
export async function forEachBounded<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  await mapBounded(items, concurrency, (item) => work(item));
}

/** At most `size` promises outstanding: `slot` waits for one to be released. */
export class Window {
  private used = 0;
  private readonly waiters: Array<() => void> = [];
  constructor(private readonly size: number) {}
  async slot(): Promise<void> {
    while (this.used >= this.size) await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.used += 1;
  }
  release(): void {
    this.used -= 1;
    this.waiters.shift()?.();
  }
}
