import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Database, PoolStats } from '../db/database.ts';
import { countOpenAnomalies } from '../db/repositories/anomalies.ts';
import { BACKLOG_COUNT_MAX, readBacklog, type Backlog } from '../db/repositories/backlog.ts';
import { ANOMALY_KINDS, type AnomalyKind } from '../domain/anomalies.ts';
import type { Clock } from '../domain/clock.ts';
import type { WebhookResponse } from '../webhooks/sender.ts';

// Metrics of the money path and of what follows it (the rail, the reaper, the outbox and its webhook
// deliveries, the worker loops, the database pool). Prometheus conventions: the unit in the name
// (`_seconds`), `_total` on counters, and bounded label sets — a label value is a status, a reason,
// a lane, a rail or a worker name, never an id (see `BoundedLabel`).

/**
 * Distinct values one free-form label (a status reason) may take; later ones are counted as `other`.
 * @internal Exported for its tests, not used elsewhere.
 */
export const REASON_LABELS_MAX = 64;
/**
 * The backlog gauges are read from the database on scrape (see ScrapeSnapshot). A scrape waits at
 * most this long for them, then answers with the last values read.
 */
const BACKLOG_SCRAPE_WAIT_MS = 2_000;

const SECONDS_BUCKETS_FAST = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const SECONDS_BUCKETS_REMOTE = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Webhook delivery results: the receiver's status class, or why there was none. */
type DeliveryClass = '2xx' | '3xx' | '4xx' | '5xx' | 'timeout' | 'error';

function deliveryClassOf(response: WebhookResponse): DeliveryClass {
  if (response.timedOut) return 'timeout';
  const code = response.statusCode;
  if (code === null || code < 200 || code > 599) return 'error';
  return `${Math.floor(code / 100)}xx` as DeliveryClass;
}

/** What one reaper question led to. */
export type ResolutionOutcome = 'settled' | 'failed' | 'reversed' | 'unresolved' | 'already_resolved' | 'error';

/**
 * A label whose values come from data (status reasons: the rail's, a refusal's error code): only
 * snake_case words pass, and only the first REASON_LABELS_MAX distinct ones; anything else is `other`.
 * So no id, free text or unbounded set can ever become a time series.
 * @internal Exported for its tests, not used elsewhere.
 */
export class BoundedLabel {
  private readonly seen = new Set<string>();
  constructor(private readonly max = REASON_LABELS_MAX) {}

  of(value: string | null | undefined): string {
    if (value === null || value === undefined || value === '') return 'none';
    if (!/^[a-z][a-z0-9_]{0,63}$/.test(value)) return 'other';
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return 'other';
    this.seen.add(value);
    return value;
  }
}

/** Open anomalies counted for `bolivar_anomalies_open`, at most (one bounded read of a partial index). */
const ANOMALIES_OPEN_COUNT_MAX = 10_000;

/**
 * Figures read from the database on scrape rather than sampled by a loop (the backlog, the open
 * anomalies, the reconciliation standing): every role is scraped (an API process runs no loop),
 * nothing is read while nobody scrapes, never on the request path; each reading is one statement of
 * bounded index probes or capped index counts (repositories/backlog.ts, countOpenAnomalies). One reading at a time per process; a scrape waits for it at most `waitMs`, and an
 * unreachable database leaves the last values in place rather than failing the scrape.
 */
export class ScrapeSnapshot<T> {
  private latest: T | undefined;
  private reading: Promise<void> | undefined;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly waitMs: number,
  ) {}

  /** Every gauge of one scrape asks at once: they share the reading in flight. */
  async get(): Promise<T | undefined> {
    this.reading ??= this.read()
      .then(
        (value) => {
          this.latest = value;
        },
        () => undefined,
      )
      .finally(() => {
        this.reading = undefined;
      });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.reading, new Promise((resolve) => (timer = setTimeout(resolve, this.waitMs)))]);
    clearTimeout(timer);
    return this.latest;
  }
}

export class MoneyMetrics {
  /** Payments the reaper stopped asking the rail about after its last allowed attempt. */
  readonly parked: Counter;
  /** Limit counters that held less than a give-back (clamped at zero): a bug upstream if ever non-zero. */
  readonly counterAnomalies: Counter;
  private readonly payouts: Counter<'status' | 'reason'>;
  private readonly reasons = new BoundedLabel();
  private readonly batchJobs: Histogram<'lane'>;
  private readonly batchSeconds: Histogram<'lane' | 'result'>;
  private readonly resolutions: Counter<'outcome'>;
  private readonly railCalls: Counter<'rail' | 'operation' | 'outcome'>;
  private readonly railSeconds: Histogram<'rail' | 'operation'>;
  private readonly deliveries: Counter<'status_class'>;
  private readonly deliverySeconds: Histogram;
  private readonly workerPasses: Counter<'worker' | 'result'>;
  private readonly anomalies: Counter<'kind'>;
  private committerDepth: () => number = () => 0;
  private backgroundUnits: () => { running: number; waiting: number } = () => ({ running: 0, waiting: 0 });

  constructor(registry: Registry, db: Database, clock: Clock) {
    const registers = [registry];
    const money = moneyPathSeries(registers);
    this.parked = money.parked;
    this.counterAnomalies = money.counterAnomalies;
    this.payouts = money.payouts;
    this.batchJobs = money.batchJobs;
    this.batchSeconds = money.batchSeconds;
    this.resolutions = money.resolutions;
    const outside = outsideSeries(registers);
    this.railCalls = outside.railCalls;
    this.railSeconds = outside.railSeconds;
    this.deliveries = outside.deliveries;
    this.deliverySeconds = outside.deliverySeconds;
    this.workerPasses = outside.workerPasses;
    this.anomalies = outside.anomalies;
    for (const kind of ANOMALY_KINDS) this.anomalies.inc({ kind }, 0);

    // The gauges read from memory come first: a scrape collects in registration order, and the pool
    // must be seen before the backlog query below takes a connection from it.
    const depth = () => this.committerDepth();
    new Gauge({
      name: 'bolivar_commit_queue_jobs',
      help: 'Money writes waiting for or in a group-commit transaction in this process (when the queue is full, new ones answer 503 overloaded)',
      registers,
      collect() {
        this.set(depth());
      },
    });
    const units = () => this.backgroundUnits();
    new Gauge({
      name: 'bolivar_background_units',
      help: 'Units of background work (batch items, outcomes the reaper brought) running or waiting for the background share, which lets one run at a time while requests are in flight',
      labelNames: ['state'],
      registers,
      collect() {
        const now = units();
        this.set({ state: 'running' }, now.running);
        this.set({ state: 'waiting' }, now.waiting);
      },
    });
    // PGlite has no pool (one in-process connection): these are PostgreSQL's only.
    if (db.poolStats) poolGauges(registers, () => db.poolStats!());
    backlogGauges(registers, db, clock);
  }

  /** The committer whose queue `bolivar_commit_queue_jobs` reports. */
  watchCommitter(depth: () => number): void {
    this.committerDepth = depth;
  }

  /** The background share whose units `bolivar_background_units` reports. */
  watchBackground(units: () => { running: number; waiting: number }): void {
    this.backgroundUnits = units;
  }

  payoutStatus(status: string, reason: string | null): void {
    this.payouts.inc({ status, reason: this.reasons.of(reason) });
  }

  commit(lane: string, jobs: number, seconds: number, committed: boolean): void {
    if (committed) this.batchJobs.observe({ lane }, jobs);
    this.batchSeconds.observe({ lane, result: committed ? 'committed' : 'failed' }, seconds);
  }

  resolution(outcome: ResolutionOutcome, questions = 1): void {
    this.resolutions.inc({ outcome }, questions);
  }

  railCall(rail: string, operation: 'submit' | 'lookup', outcome: string, seconds: number): void {
    this.railCalls.inc({ rail, operation, outcome });
    this.railSeconds.observe({ rail, operation }, seconds);
  }

  delivery(response: WebhookResponse, attempted: boolean): void {
    this.deliveries.inc({ status_class: deliveryClassOf(response) });
    if (attempted) this.deliverySeconds.observe(response.durationMs / 1000);
  }

  /** Once the anomaly's transaction has committed, and only when it stored it (not a repeat). */
  anomalyRecorded(kind: AnomalyKind): void {
    this.anomalies.inc({ kind });
  }

  workerPass(worker: string, ok: boolean): void {
    this.workerPasses.inc({ worker, result: ok ? 'ok' : 'error' });
  }
}

type Registers = Registry[];

/** The counters and histograms of the money path: payouts, group commits, the reaper. */
function moneyPathSeries(registers: Registers) {
  return {
    parked: new Counter({
      name: 'bolivar_reaper_parked_payments_total',
      help: 'Payments the reaper stopped asking the rail about (still submitted/unknown; never invented)',
      registers,
    }),
    counterAnomalies: new Counter({
      name: 'bolivar_limit_counter_anomalies_total',
      help: 'Limit counters found holding less than what a failure or reversal gave back',
      registers,
    }),
    payouts: new Counter({
      name: 'bolivar_payouts_total',
      help:
        'Payout status changes, counted once committed: submitted (accepted and charged), failed, settled, unknown, reversed; ' +
        'refused = no payment created (reason: the error code). reason: the status reason',
      labelNames: ['status', 'reason'],
      registers,
    }),
    batchJobs: new Histogram({
      name: 'bolivar_commit_batch_jobs',
      help: 'Jobs per group-commit transaction (lane payout: payouts of one tenant; lane outcome: rail outcomes)',
      labelNames: ['lane'],
      buckets: [1, 2, 4, 8, 16, 32, 64, 128],
      registers,
    }),
    batchSeconds: new Histogram({
      name: 'bolivar_commit_batch_duration_seconds',
      help: 'Time of one group-commit transaction, BEGIN to COMMIT (result failed: rolled back, its jobs retried or refused)',
      labelNames: ['lane', 'result'],
      buckets: SECONDS_BUCKETS_FAST,
      registers,
    }),
    resolutions: new Counter({
      name: 'bolivar_reaper_resolutions_total',
      help: 'What each question of the reaper to the rail led to: settled, failed, reversed, unresolved (asked again later), already_resolved (by another path), error',
      labelNames: ['outcome'],
      registers,
    }),
  };
}

/** The counters and histograms of what the money path talks to: the rail, webhook receivers, the worker loops; and anomalies. */
function outsideSeries(registers: Registers) {
  return {
    railCalls: new Counter({
      name: 'bolivar_rail_calls_total',
      help: 'Calls to the rail by operation (submit, lookup) and outcome (the status it answered, not_found, timeout or error)',
      labelNames: ['rail', 'operation', 'outcome'],
      registers,
    }),
    railSeconds: new Histogram({
      name: 'bolivar_rail_call_duration_seconds',
      help: 'Rail call latency by operation (a timed-out submit counts its time until the timeout)',
      labelNames: ['rail', 'operation'],
      buckets: SECONDS_BUCKETS_REMOTE,
      registers,
    }),
    deliveries: new Counter({
      name: 'bolivar_webhook_deliveries_total',
      help: 'Webhook delivery attempts by result: the receiver status class (2xx delivered), timeout, or error (no answer: refused, unreachable, forbidden address, no endpoint)',
      labelNames: ['status_class'],
      registers,
    }),
    deliverySeconds: new Histogram({
      name: 'bolivar_webhook_delivery_duration_seconds',
      help: 'Webhook delivery attempt latency, connect to the end of the response',
      buckets: SECONDS_BUCKETS_REMOTE,
      registers,
    }),
    workerPasses: new Counter({
      name: 'bolivar_worker_passes_total',
      help: 'Passes of each background loop (reaper, webhook-dispatcher, daily-close, idempotency-purge, rail-inbox-purge, reconciliation) by result; a loop whose rate falls to 0 is stuck',
      labelNames: ['worker', 'result'],
      registers,
    }),
    anomalies: new Counter({
      name: 'bolivar_anomalies_total',
      help: 'Anomalies this process recorded, by kind, each counted once when stored (a contradiction heard again is not counted again); open ones: bolivar_anomalies_open',
      labelNames: ['kind'],
      registers,
    }),
  };
}

/** The PostgreSQL pool as this process sees it. */
function poolGauges(registers: Registers, poolStats: () => PoolStats[]): void {
  const poolGauge = (name: string, help: string, value: (s: PoolStats) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['pool'],
      registers,
      collect() {
        for (const stats of poolStats()) this.set({ pool: stats.pool }, value(stats));
      },
    });
  poolGauge(
    'bolivar_db_pool_connections_in_use',
    'PostgreSQL connections checked out of the pool (pool main: money and reads; relaxed: bookkeeping without WAL flush wait)',
    (s) => s.total - s.idle,
  );
  poolGauge(
    'bolivar_db_pool_clients_waiting',
    'Requests of this process waiting for a free PostgreSQL connection',
    (s) => s.waiting,
  );
  poolGauge('bolivar_db_pool_connections_max', 'Size of the PostgreSQL pool (DB_POOL_SIZE for main)', (s) => s.max);
}

/** The gauges read from the database on scrape (ScrapeSnapshot): the backlog and the open anomalies. */
function backlogGauges(registers: Registers, db: Database, clock: Clock): void {
  const snapshot = new ScrapeSnapshot<Backlog>(() => readBacklog(db, BACKLOG_COUNT_MAX), BACKLOG_SCRAPE_WAIT_MS);
  const ageSeconds = (at: Date | null) =>
    at === null ? 0 : Math.max(0, (clock.now().getTime() - at.getTime()) / 1000);
  const backlogGauge = (name: string, help: string, value: (b: Backlog) => number) =>
    new Gauge({
      name,
      help,
      registers,
      async collect() {
        const backlog = await snapshot.get();
        if (backlog) this.set(value(backlog));
      },
    });
  new Gauge({
    name: 'bolivar_outbox_events',
    help: `Outcome events not delivered, by status: pending (waiting for delivery or a retry), dead (attempts exhausted; POST /v1/events/retry-dead). Counted up to ${BACKLOG_COUNT_MAX}`,
    labelNames: ['status'],
    registers,
    async collect() {
      const backlog = await snapshot.get();
      if (!backlog) return;
      this.set({ status: 'pending' }, backlog.outboxPending);
      this.set({ status: 'dead' }, backlog.outboxDead);
    },
  });
  backlogGauge(
    'bolivar_outbox_oldest_pending_age_seconds',
    'Age of the oldest outcome event not yet delivered (0: none pending)',
    (b) => ageSeconds(b.oldestPendingEventAt),
  );
  backlogGauge(
    'bolivar_payments_unresolved',
    `Payments submitted or unknown: waiting for the rail's outcome (parked ones included). Counted up to ${BACKLOG_COUNT_MAX}`,
    (b) => b.unresolved,
  );
  backlogGauge(
    'bolivar_payments_parked_unresolved',
    'Payments still submitted/unknown that the reaper no longer asks about (re-queue with POST /v1/admin/payments/{id}/recheck)',
    (b) => b.parked,
  );
  const openAnomalies = new ScrapeSnapshot(
    () => countOpenAnomalies(db, ANOMALIES_OPEN_COUNT_MAX),
    BACKLOG_SCRAPE_WAIT_MS,
  );
  new Gauge({
    name: 'bolivar_anomalies_open',
    help: `Anomalies waiting for an operator, by kind (GET /v1/admin/anomalies?status=open). Counted up to ${ANOMALIES_OPEN_COUNT_MAX} in all`,
    labelNames: ['kind'],
    registers,
    async collect() {
      const open = await openAnomalies.get();
      if (!open) return;
      for (const kind of ANOMALY_KINDS) this.set({ kind }, open.get(kind) ?? 0);
    },
  });
  backlogGauge(
    'bolivar_reaper_lag_seconds',
    'Age of the oldest unresolved payment the reaper still asks about (parked ones excluded: bolivar_payments_parked_unresolved); 0 when none',
    (b) => ageSeconds(b.oldestUnresolvedAt),
  );
}
