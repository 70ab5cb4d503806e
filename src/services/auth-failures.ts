import { isWellFormedKey, keyPrefix } from '../domain/api-keys.ts';

/**
 * Addresses tracked at most. The least recently failing address is forgotten first; memory is at
 * most this many addresses × `limit` timestamps (10,000 × 300 × 8 bytes with the defaults).
 */
export const AUTH_FAILURE_ADDRESSES_MAX = 10_000;
/** Key prefixes tracked at most: there are three (`bsk_test_`, `bsk_live_`, `bsk_platform_`). */
export const AUTH_FAILURE_PREFIXES_MAX = 8;

export interface AuthFailureLimits {
  /** Failed authentications per address per window; 0 disables the limiter. */
  limit: number;
  windowMs: number;
  addressesMax: number;
}

/**
 * Failed authentications per subject (a client address, or a key prefix), over a sliding window:
 * once a subject has `limit` failures less than `windowMs` old, it is limited until the oldest of them
 * leaves the window. What "limited" means is the auth hook's business (FailedAuthentications).
 *
 * State is per process and bounded (least recently failing subjects are dropped first). A
 * successful authentication does not clear a subject's failures: otherwise one valid key would let
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

  /** Subjects currently tracked (for tests and diagnostics). */
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

export type LimitedBy = 'address' | 'key_prefix';

/**
 * The two budgets of failed authentications: per client address (every failure: unknown, revoked or
 * malformed key) and per key prefix across all addresses (well-formed keys that are not active: the
 * failures that cost a database lookup, so that many addresses together cannot make every guess
 * cost one). A limited client is refused only its keys that are certainly not active; a key that
 * authenticates is always served (see the auth hook).
 */
export class FailedAuthentications {
  constructor(
    readonly byAddress: AuthFailureLimiter,
    readonly byKeyPrefix: AuthFailureLimiter,
  ) {}

  /** The longer of the two waits that apply to this request, and which budget it is; undefined when neither is spent. */
  limited(address: string, key: string): { waitMs: number; by: LimitedBy; limiter: AuthFailureLimiter } | undefined {
    const byAddress = this.byAddress.blockedForMs(address);
    const prefix = lookedUpPrefixOf(key);
    const byPrefix = prefix === undefined ? 0 : this.byKeyPrefix.blockedForMs(prefix);
    if (byAddress <= 0 && byPrefix <= 0) return undefined;
    return byAddress >= byPrefix
      ? { waitMs: byAddress, by: 'address', limiter: this.byAddress }
      : { waitMs: byPrefix, by: 'key_prefix', limiter: this.byKeyPrefix };
  }

  /** Counts a failure; answers the budgets this failure just spent (each worth one log line). */
  record(address: string, key: string): LimitedBy[] {
    const reached: LimitedBy[] = [];
    if (this.byAddress.recordFailure(address)) reached.push('address');
    const prefix = lookedUpPrefixOf(key);
    if (prefix !== undefined && this.byKeyPrefix.recordFailure(prefix)) reached.push('key_prefix');
    return reached;
  }
}

/** `bsk_test_`, `bsk_live_` or `bsk_platform_` for a well-formed key (one that costs a lookup); undefined otherwise. */
export function lookedUpPrefixOf(key: string): string | undefined {
  return isWellFormedKey(key) ? keyPrefix(key) : undefined;
}
