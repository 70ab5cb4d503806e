// The rail callback route's budgets. A bank's gateway delivers callbacks in bursts (a settlement run,
// a redelivery after an outage), from one address, and reads a 429 as "give up". So a callback that
// verifies is charged to its rail's budget per second (RAIL_CALLBACK_RPS), sized for bursts; past it
// the answer is 503 `overloaded` with Retry-After, the answer every gateway retries. Only a verified
// callback is charged there — a stranger's unsigned bodies cannot spend a bank's budget — and one that
// does not verify is charged to its address instead (PUBLIC_RATE_LIMIT_RPS, as every route that needs
// no key), past which it is 429. Per process, in memory.

/** Both budgets are counted over windows of this length. */
const WINDOW_MS = 1000;
/** Addresses counted apart; beyond this many in one window, the rest share one counter (bounded memory whoever calls). */
const ADDRESSES_COUNTED_MAX = 10_000;
const ANY_OTHER_ADDRESS = '';

/** Counts takes per key over fixed one-second windows; at most `keysMax` keys, the rest share one. */
class WindowCounter {
  private readonly windows = new Map<string, { startedMs: number; used: number }>();

  constructor(
    private readonly perSecond: number,
    private readonly keysMax: number,
    private readonly nowMs: () => number,
  ) {}

  /** Takes one from `key`'s window; false (nothing taken) when this second's is spent. 0 per second is no limit. */
  take(key: string): boolean {
    if (this.perSecond === 0) return true;
    const now = this.nowMs();
    if (this.windows.size >= this.keysMax && !this.windows.has(key)) this.dropEnded(now);
    const counted = this.windows.has(key) || this.windows.size < this.keysMax ? key : ANY_OTHER_ADDRESS;
    const window = this.windows.get(counted);
    if (!window || now - window.startedMs >= WINDOW_MS) {
      this.windows.set(counted, { startedMs: now, used: 1 });
      return true;
    }
    if (window.used >= this.perSecond) return false;
    window.used += 1;
    return true;
  }

  private dropEnded(now: number): void {
    for (const [key, window] of this.windows) if (now - window.startedMs >= WINDOW_MS) this.windows.delete(key);
  }
}

export class CallbackBudget {
  private readonly verified: WindowCounter;
  private readonly unverified: WindowCounter;

  /**
   * `railsMax`: the configured connectors (only their callbacks verify, so only they are counted).
   * `perAddressPerSecond`: callbacks that do not verify, per address.
   */
  constructor(
    readonly perSecond: number,
    readonly perAddressPerSecond: number,
    railsMax: number,
    nowMs: () => number,
  ) {
    this.verified = new WindowCounter(perSecond, Math.max(1, railsMax), nowMs);
    this.unverified = new WindowCounter(perAddressPerSecond, ADDRESSES_COUNTED_MAX, nowMs);
  }

  /** Takes one verified callback from `rail`'s budget; false when this second's is spent. */
  admit(rail: string): boolean {
    return this.verified.take(rail);
  }

  /** Charges a callback that did not verify to its address; false when that address has spent this second's. */
  chargeRefused(address: string): boolean {
    return this.unverified.take(address);
  }
}
