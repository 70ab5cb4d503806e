// One rail's circuit breaker, per process. It judges the RAIL, not a transfer: it opens only on
// evidence that the rail is down —
//   - connections refused in a row (the rail is not there: `refused`), or
//   - a failure rate over a sliding time window, once the window holds a minimum number of calls
//     (the resilience4j / Hystrix model): a handful of transfers whose fate is unknown (a timeout,
//     a 503, a reset) never opens it by themselves, however many in a row.
// Any answer of the rail — a status, a callback, a definitive rejection — is evidence it is up: it
// closes the breaker whatever its state. While open, the rail is skipped when new payouts are
// routed (they wait for a rail instead: docs/rails.md). When the open while is over the breaker is
// half-open: it asks the rail's health ONCE — never a real payment — and a bounded number of
// payouts wait for that verdict instead of being turned away.

import type { RailHealth } from './rail.ts';

export type BreakerState = 'closed' | 'open' | 'half_open';

export interface BreakerSettings {
  /** Connections refused in a row that open the breaker (RAIL_BREAKER_FAILURES). */
  refusalsToOpen: number;
  /** The sliding window the failure rate is taken over (RAIL_BREAKER_WINDOW_MS). */
  windowMs: number;
  /** Calls the window must hold before its rate can open the breaker (RAIL_BREAKER_MIN_CALLS). */
  minimumCalls: number;
  /** Failed calls, in percent of the window's calls, that open the breaker (RAIL_BREAKER_FAILURE_RATE). */
  failureRatePercent: number;
  /** How long it stays open before its half-open probe (RAIL_BREAKER_OPEN_MS). */
  openMs: number;
  /** The longest the half-open probe (the rail's health) may take; past it the probe failed. */
  probeTimeoutMs: number;
  /** Payouts that may wait for a half-open probe's verdict at once (RAIL_BREAKER_HALF_OPEN_WAITERS). */
  halfOpenWaitersMax: number;
}

/** The window is kept as this many buckets: bounded memory whatever the traffic. */
const BREAKER_WINDOW_BUCKETS = 30;

interface Bucket {
  startMs: number;
  calls: number;
  failures: number;
}

export class CircuitBreaker {
  private consecutiveRefusals = 0;
  private readonly buckets: Bucket[] = [];
  private openedAtMs: number | null = null;
  private probing: Promise<BreakerState> | null = null;
  private waiters = 0;
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

  /** Failed calls in the window now (refusals, timeouts, errors): what the rate is made of. */
  get failures(): number {
    return this.window().failures;
  }

  /** Calls in the window now. */
  get calls(): number {
    return this.window().calls;
  }

  /** What the last half-open probe answered (null: none yet). */
  get probed(): RailHealth | null {
    return this.lastProbe;
  }

  /** May a new payout go to this rail now, without waiting? Closed: yes; otherwise no. */
  admits(): boolean {
    const state = this.state;
    if (state === 'half_open') void this.probeIfDue();
    return state === 'closed';
  }

  /**
   * May a new payout go to this rail? Closed: yes. Open: no. Half-open: it waits for the probe's
   * verdict (one probe however many wait), up to `halfOpenWaitersMax` payouts at once; the others
   * are answered no at once, as while open.
   */
  async admission(): Promise<boolean> {
    const state = this.state;
    if (state !== 'half_open') return state === 'closed';
    if (this.waiters >= this.settings.halfOpenWaitersMax) {
      void this.probeIfDue();
      return false;
    }
    this.waiters += 1;
    try {
      return (await this.probeIfDue()) === 'closed';
    } finally {
      this.waiters -= 1;
    }
  }

  /** The rail answered (a status, a callback, a definitive rejection): it is up. */
  success(): void {
    this.consecutiveRefusals = 0;
    this.record(false);
    if (this.openedAtMs !== null && !this.probing) this.close();
  }

  /** The rail refused the connection: it is not there (counted in a row, and in the rate). */
  refused(): void {
    this.consecutiveRefusals += 1;
    this.record(true);
    if (this.openedAtMs === null && this.consecutiveRefusals >= this.settings.refusalsToOpen) this.open();
    else this.openIfRateExceeded();
  }

  /** The rail did not answer a question in time, or answered nothing readable: counted in the rate only. */
  failure(): void {
    this.record(true);
    this.openIfRateExceeded();
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
      this.close();
      return 'closed';
    }
    this.open();
    return 'open';
  }

  private openIfRateExceeded(): void {
    if (this.openedAtMs !== null) return;
    const { calls, failures } = this.window();
    if (calls >= this.settings.minimumCalls && failures * 100 >= calls * this.settings.failureRatePercent) this.open();
  }

  private record(failed: boolean): void {
    const now = this.nowMs();
    const width = Math.max(1, Math.ceil(this.settings.windowMs / BREAKER_WINDOW_BUCKETS));
    const startMs = now - (now % width);
    let bucket = this.buckets[this.buckets.length - 1];
    if (!bucket || bucket.startMs !== startMs) {
      bucket = { startMs, calls: 0, failures: 0 };
      this.buckets.push(bucket);
      if (this.buckets.length > BREAKER_WINDOW_BUCKETS + 1) this.buckets.shift();
    }
    bucket.calls += 1;
    if (failed) bucket.failures += 1;
  }

  private window(): { calls: number; failures: number } {
    const since = this.nowMs() - this.settings.windowMs;
    let calls = 0;
    let failures = 0;
    for (const bucket of this.buckets) {
      if (bucket.startMs < since) continue;
      calls += bucket.calls;
      failures += bucket.failures;
    }
    return { calls, failures };
  }

  private close(): void {
    this.openedAtMs = null;
    this.consecutiveRefusals = 0;
    // The window's failures are what opened it: a rail that is back starts from a clean window.
    this.buckets.length = 0;
    this.onChange?.('closed');
  }

  private open(): void {
    this.openedAtMs = this.nowMs();
    this.onChange?.('open');
  }
}

/** The rail's health, bounded: an adapter that throws or never answers is unhealthy. */
async function boundedHealth(
  probe: (signal: AbortSignal) => Promise<RailHealth>,
  timeoutMs: number,
): Promise<RailHealth> {
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
