// The rail callback route's own budget: a bank's gateway delivers callbacks in bursts (a settlement
// run, a redelivery after an outage), from one address, and reads a 429 as "give up". So its
// callbacks are not counted in the per-address limit of the other routes that need no key; each rail
// has a budget of its own per second, sized for bursts (RAIL_CALLBACK_RPS), and past it the answer is
// 503 `overloaded` with Retry-After — the answer every gateway retries. Per process, in memory.

/** The budget is counted over windows of this length. */
const WINDOW_MS = 1000;
/**
 * Rails counted apart: names beyond this (a stranger trying names) share one budget, so the counters
 * stay bounded whoever calls.
 */
const RAILS_COUNTED_MAX = 64;
const ANY_OTHER_RAIL = '';

export class CallbackBudget {
  private readonly windows = new Map<string, { startedMs: number; used: number }>();

  constructor(
    readonly perSecond: number,
    private readonly nowMs: () => number,
  ) {}

  /** Takes one callback from `rail`'s budget; false (nothing taken) when this second's is spent. */
  take(rail: string): boolean {
    const key = this.windows.has(rail) || this.windows.size < RAILS_COUNTED_MAX ? rail : ANY_OTHER_RAIL;
    const now = this.nowMs();
    const window = this.windows.get(key);
    if (!window || now - window.startedMs >= WINDOW_MS) {
      this.windows.set(key, { startedMs: now, used: 1 });
      return true;
    }
    if (window.used >= this.perSecond) return false;
    window.used += 1;
    return true;
  }
}
