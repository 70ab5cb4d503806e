import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Database } from '../db/database.ts';
import { readStanding, type Standing } from '../db/repositories/reconciliation-runs.ts';
import type { Clock } from '../domain/clock.ts';
import { RECONCILIATION_CHECKS } from '../domain/reconciliation.ts';
import { ScrapeSnapshot } from './money-metrics.ts';
import type { RunObserver } from './reconciliation-run.ts';

/** A scrape waits at most this long for the standing read from the database, then answers with the last one. */
const STANDING_SCRAPE_WAIT_MS = 2_000;

const RUN_SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/**
 * The reconciliation's metrics. The standing (discrepancies of each tenant and mode's last completed
 * run, how long since the last clean one) is read from the database on scrape, so every process
 * reports the same figures whichever worker ran the runs, and a restart loses nothing. Run counts and
 * durations are this process's own.
 */
export class ReconciliationMetrics implements RunObserver {
  private readonly runs: Counter<'result'>;
  private readonly seconds: Histogram<'result'>;

  constructor(registry: Registry, db: Database, clock: Clock) {
    const registers = [registry];
    this.runs = new Counter({
      name: 'bolivar_reconciliation_runs_total',
      help: 'Reconciliation runs finished by this process, by result: clean, discrepancies, failed (a check could not run), abandoned (stopped, or its lease lost)',
      labelNames: ['result'],
      registers,
    });
    this.seconds = new Histogram({
      name: 'bolivar_reconciliation_run_duration_seconds',
      help: 'Duration of one reconciliation run (one tenant and mode), by result',
      labelNames: ['result'],
      buckets: RUN_SECONDS_BUCKETS,
      registers,
    });
    const snapshot = new ScrapeSnapshot<Standing>(() => readStanding(db, clock.now()), STANDING_SCRAPE_WAIT_MS);
    const standing = () => snapshot.get();
    new Gauge({
      name: 'bolivar_reconciliation_discrepancies',
      help: "Discrepancies found by each tenant and mode's last completed reconciliation run, summed, by check (0: that check agreed everywhere)",
      labelNames: ['check'],
      registers,
      async collect() {
        const s = await standing();
        if (!s) return;
        for (const check of RECONCILIATION_CHECKS) this.set({ check }, s.discrepancies[check] ?? 0);
      },
    });
    new Gauge({
      name: 'bolivar_reconciliation_last_clean_run_age_seconds',
      help: 'The longest any tenant and mode has gone without a clean reconciliation run (counted from its first completed run if it was never clean); 0 before any run completed',
      registers,
      async collect() {
        const s = await standing();
        if (s) this.set(s.oldestCleanAgeSeconds);
      },
    });
  }

  runFinished(result: 'clean' | 'discrepancies' | 'failed' | 'abandoned', seconds: number): void {
    this.runs.inc({ result });
    this.seconds.observe({ result }, seconds);
  }
}
