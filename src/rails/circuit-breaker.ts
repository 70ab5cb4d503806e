// One rail's circuit breaker, per process. Consecutive transport failures (the rail refused the
// connection, did not answer in time, or threw) open it: for a while the rail is skipped when new
// payouts are routed, instead of every payout waiting for its timeout there. When that while is over
// the breaker is half-open: it asks the rail's health ONCE — never a real payment — and closes on a
// healthy answer or opens again for another while. A definitive business answer (the bank rejected
// the account) is the rail working: it counts as a success.

import type { RailHealth } from './rail.ts';

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerSettings {
  /** Consecutive transport failures that open the breaker (RAIL_BREAKER_FAILURES). */
  failuresToOpen: number;
  /** How long it stays open before its half-open probe (RAIL_BREAKER_OPEN_MS). */
  openMs: number;
  /** The longest the half-open probe (the rail's health) may take; past it the probe failed. */
  probeTimeoutMs: number;
}

export class CircuitBreaker {
  private consecutiveFailures = 0;
  private openedAtMs: number | null = null;
  private probing: Promise<BreakerState> | null = null;
  private lastProbe: RailHealth | null = null;

  constructor(
    private readonly settings: BreakerSettings,
    private readonly nowMs: () => number,
    private readonly probeRail: (signal: AbortSignal) => Promise<RailHealth>,
    private readonly onChange?: (state: BreakerState) => void,
  ) {}

  /** closed, open (skipped), or half_open (its open while is over: the next question is the probe). */
  get state(): BreakerState {
    if (this.openedAtMs === null) return 'closed';
    return this.probing || this.nowMs() - this.openedAtMs >= this.settings.openMs ? 'half_open' : 'open';
  }

  /** Transport failures in a row, as counted now. */
  get failures(): number {
    return this.consecutiveFailures;
  }

  /** What the last half-open probe answered (null: none yet). */
  get probed(): RailHealth | null {
    return this.lastProbe;
  }

  /**
   * May a new payout be routed to this rail now? Closed: yes. Open: no. Half-open: no, and the probe
   * starts if it has not (the payouts routed meanwhile go elsewhere; once it closes, they come back).
   */
  admits(): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'half_open') void this.probeIfDue();
    return false;
  }

  /** The rail answered a question (a status, a definitive rejection): the failures in a row end. */
  success(): void {
    // Only the probe closes an open breaker: one late answer of a call made before it opened proves little.
    if (this.openedAtMs === null) this.consecutiveFailures = 0;
  }

  /** The rail did not answer a question (refused, timed out, threw). */
  failure(): void {
    if (this.openedAtMs !== null) return;
    this.consecutiveFailures += 1;
    if (this.consecutiveFailures >= this.settings.failuresToOpen) this.open();
  }

  /** The half-open probe, once per open while however many ask; resolves to the state it leaves. */
  probeIfDue(): Promise<BreakerState> {
    if (this.probing) return this.probing;
    if (this.state !== 'half_open') return Promise.resolve(this.state);
    this.probing = this.probe().finally(() => {
      this.probing = null;
    });
    return this.probing;
  }

  private async probe(): Promise<BreakerState> {
    const health = await boundedHealth(this.probeRail, this.settings.probeTimeoutMs);
    this.lastProbe = health;
    if (health.ok) {
      this.openedAtMs = null;
      this.consecutiveFailures = 0;
      this.onChange?.('closed');
      return 'closed';
    }
    this.open();
    return 'open';
  }

  private open(): void {
    this.openedAtMs = this.nowMs();
    this.onChange?.('open');
  }
}

/** The rail's health, bounded: an adapter that throws or never answers is unhealthy. */
async function boundedHealth(probe: (signal: AbortSignal) => Promise<RailHealth>, timeoutMs: number): Promise<RailHealth> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<RailHealth>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve({ ok: false, message: `no answer within ${timeoutMs} ms` });
    }, timeoutMs);
  });
  try {
    return await Promise.race([probe(controller.signal), timeout]);
  } catch (error) {
    return { ok: false, message: (error as Error)?.message ?? String(error) };
  } finally {
    clearTimeout(timer);
  }
}
