/**
 * Addresses tracked at most. The least recently failing address is forgotten first; memory is at
 * most this many addresses × `limit` timestamps (10,000 × 20 × 8 bytes with the defaults).
 */
export const AUTH_FAILURE_ADDRESSES_MAX = 10_000;

export interface AuthFailureLimits {
  /** Failed authentications per address per window; 0 disables the limiter. */
  limit: number;
  windowMs: number;
  addressesMax: number;
}

/**
 * Failed authentications (unknown, revoked or malformed key) per client address, over a sliding
 * window: once an address has `limit` failures less than `windowMs` old, its requests with a key are
 * refused without a database lookup until the oldest of them leaves the window. Guessing keys thus
 * costs the guesser time instead of costing us a lookup per guess.
 *
 * State is per process and bounded (least recently failing addresses are dropped first). A
 * successful authentication does not clear an address's failures: otherwise one valid key would let
 * its holder guess others without bound.
 *
 * Requests already past the check when the limit is reached still finish their lookup, so a burst of
 * concurrent guesses may cost a few more lookups than `limit`; those share coalesced statements.
 */
export class AuthFailureLimiter {
  /** Address → times of its failures inside the window, oldest first; least recently failing first. */
  private readonly failures = new Map<string, number[]>();

  constructor(
    readonly limits: AuthFailureLimits,
    private readonly nowMs: () => number,
  ) {}

  get enabled(): boolean {
    return this.limits.limit > 0;
  }

  /** How long `address` must wait before its next attempt, in ms; 0 when it may try now. */
  blockedForMs(address: string): number {
    if (!this.enabled) return 0;
    const times = this.failures.get(address);
    if (!times) return 0;
    const now = this.nowMs();
    this.expire(times, now);
    if (times.length === 0) {
      this.failures.delete(address);
      return 0;
    }
    if (times.length < this.limits.limit) return 0;
    return times[0]! + this.limits.windowMs - now;
  }

  /** Counts a failure; true when it is the one that reaches the limit (worth one log line). */
  recordFailure(address: string): boolean {
    if (!this.enabled) return false;
    const now = this.nowMs();
    const times = this.failures.get(address) ?? [];
    // Re-inserted so that the map's order stays "least recently failing first" for eviction.
    this.failures.delete(address);
    this.expire(times, now);
    const wasBelow = times.length < this.limits.limit;
    times.push(now);
    // Only the newest `limit` failures decide anything; concurrent lookups may add more.
    if (times.length > this.limits.limit) times.splice(0, times.length - this.limits.limit);
    this.failures.set(address, times);
    if (this.failures.size > this.limits.addressesMax) this.failures.delete(this.failures.keys().next().value!);
    return wasBelow && times.length === this.limits.limit;
  }

  /** Addresses currently tracked (for tests and diagnostics). */
  get size(): number {
    return this.failures.size;
  }

  private expire(times: number[], now: number): void {
    // A clock set back must not extend a block past one window: such times count as now.
    for (let i = 0; i < times.length; i += 1) if (times[i]! > now) times[i] = now;
    let drop = 0;
    while (drop < times.length && times[drop]! <= now - this.limits.windowMs) drop += 1;
    if (drop > 0) times.splice(0, drop);
  }
}
