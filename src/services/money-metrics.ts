import { Counter, Gauge, type Registry } from 'prom-client';
import type { Queryable } from '../db/database.ts';

/** Metrics of the money path that operators alert on. Label sets are bounded (no ids). */
export class MoneyMetrics {
  /** Payments the reaper stopped asking the rail about after its last allowed attempt. */
  readonly parked: Counter;
  /** Limit counters that held less than a give-back (clamped at zero): a bug upstream if ever non-zero. */
  readonly counterAnomalies: Counter;

  constructor(registry: Registry, db: Queryable) {
    this.parked = new Counter({
      name: 'bolivar_reaper_parked_payments_total',
      help: 'Payments the reaper stopped asking the rail about (still submitted/unknown; never invented)',
      registers: [registry],
    });
    this.counterAnomalies = new Counter({
      name: 'bolivar_limit_counter_anomalies_total',
      help: 'Limit counters found holding less than what a failure or reversal gave back',
      registers: [registry],
    });
    new Gauge({
      name: 'bolivar_payments_parked_unresolved',
      help: 'Payments still submitted/unknown that the reaper no longer asks about (re-queue with POST /v1/admin/payments/{id}/recheck)',
      registers: [registry],
      async collect() {
        try {
          const { rows } = await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM payments WHERE resolution_parked_at IS NOT NULL AND status IN ('submitted', 'unknown')`,
          );
          this.set(rows[0]?.n ?? 0);
        } catch {
          // The database is unreachable: the scrape keeps the last value rather than failing.
        }
      },
    });
  }
}
