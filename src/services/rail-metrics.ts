// Per-rail metrics: what each rail was asked and answered (with MoneyMetrics' rail call series),
// failures by reason, failovers, the breaker's state; and the same counts kept in memory since the
// process started, for the admin list and the console's rail-health screen.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { BreakerState } from '../rails/circuit-breaker.ts';
import type { RailObserver } from '../rails/observed-rail.ts';
import type { MoneyMetrics } from './money-metrics.ts';

/** The breaker gauge's values: 0 closed, 1 half-open (probing), 2 open. */
const BREAKER_VALUES: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };
/** Distinct failure reasons kept per rail in memory; more are counted as `other` (a rail's reasons are a closed set). */
const FAILURE_REASONS_MAX = 32;

/** What one rail did since this process started. */
export interface RailCounts {
  sends: number;
  failures: Record<string, number>;
  failovers: number;
  /** Submits and lookups timed, and their total seconds (the mean latency is seconds / calls). */
  calls: number;
  seconds: number;
  lastSendAt: string | null;
}

export class RailMetrics implements RailObserver {
  private readonly failures: Counter<'rail' | 'reason'>;
  private readonly failovers: Counter<'from' | 'to'>;
  private readonly breakers = new Map<string, () => BreakerState>();
  private readonly counts = new Map<string, RailCounts>();

  constructor(
    registry: Registry,
    private readonly money: MoneyMetrics,
    private readonly nowIso: () => string,
  ) {
    const registers = [registry];
    this.failures = new Counter({
      name: 'bolivar_rail_failures_total',
      help: 'Submits that did not end in an accepted transfer, by rail and reason: a failure reason the rail gave, or not_received (provably not received), timeout or error (fate unknown)',
      labelNames: ['rail', 'reason'],
      registers,
    });
    this.failovers = new Counter({
      name: 'bolivar_rail_failovers_total',
      help: 'Payouts moved to the next rail because the previous one provably did not receive them',
      labelNames: ['from', 'to'],
      registers,
    });
    const breakers = this.breakers;
    new Gauge({
      name: 'bolivar_rail_breaker_state',
      help: "A rail's circuit breaker in this process: 0 closed, 1 half-open (its open while is over: the next payout routed starts its health probe), 2 open (new payouts skip it)",
      labelNames: ['rail'],
      registers,
      collect() {
        // Read at each scrape: an open breaker becomes half-open by time alone, with no call to tell.
        for (const [rail, state] of breakers) this.set({ rail }, BREAKER_VALUES[state()]);
      },
    });
  }

  /** A rail of this process and its breaker: its series start at zero, so a dashboard sees it before its first call. */
  known(rail: string, breaker: () => BreakerState): void {
    this.breakers.set(rail, breaker);
    this.countsOf(rail);
  }

  railCall(rail: string, operation: 'submit' | 'lookup', outcome: string, seconds: number): void {
    this.money.railCall(rail, operation, outcome, seconds);
    const counts = this.countsOf(rail);
    counts.calls += 1;
    counts.seconds += seconds;
    if (operation !== 'submit') return;
    counts.sends += 1;
    counts.lastSendAt = this.nowIso();
  }

  /** A submit that did not end in an accepted transfer, by why. */
  sendFailed(rail: string, reason: string): void {
    const counts = this.countsOf(rail);
    const known = reason in counts.failures || Object.keys(counts.failures).length < FAILURE_REASONS_MAX;
    const label = known ? reason : 'other';
    counts.failures[label] = (counts.failures[label] ?? 0) + 1;
    this.failures.inc({ rail, reason: label });
  }

  failover(from: string, to: string): void {
    this.countsOf(from).failovers += 1;
    this.failovers.inc({ from, to });
  }

  of(rail: string): RailCounts {
    const counts = this.countsOf(rail);
    return { ...counts, failures: { ...counts.failures } };
  }

  private countsOf(rail: string): RailCounts {
    let counts = this.counts.get(rail);
    if (!counts) {
      counts = { sends: 0, failures: {}, failovers: 0, calls: 0, seconds: 0, lastSendAt: null };
      this.counts.set(rail, counts);
    }
    return counts;
  }
}
