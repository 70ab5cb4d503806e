// Helpers for the reconciliation tests: a service of one's own (page sizes, a hook, an observer that
// counts), and a database whose run snapshots pause until released.
import type { Database, Queryable, TransactionHandle } from '../../src/db/database.ts';
import type { Clock } from '../../src/domain/clock.ts';
import { ReconciliationService } from '../../src/services/reconciliation.ts';
import type { DiscrepancyHook, PageSizes, RunObserver } from '../../src/services/reconciliation-run.ts';

/** Counts the runs a service finished, by result. */
export class CountingObserver implements RunObserver {
  readonly results: string[] = [];
  runFinished(result: string): void {
    this.results.push(result);
  }
}

export function reconciliationService(
  db: Database,
  clock: Clock,
  options: {
    intervalS?: number;
    fullIntervalS?: number;
    pageSizes?: PageSizes;
    onDiscrepancies?: DiscrepancyHook;
  } = {},
): { service: ReconciliationService; observer: CountingObserver } {
  const observer = new CountingObserver();
  const service = new ReconciliationService(
    db,
    clock,
    {
      intervalS: options.intervalS ?? 0,
      fullIntervalS: options.fullIntervalS ?? 604_800,
      executesRuns: false,
      pageSizes: options.pageSizes,
    },
    observer,
    undefined,
    options.onDiscrepancies,
  );
  return { service, observer };
}

/**
 * `db`, except that a run stops until `release()`: `inside`, in its first read-only snapshot, after
 * the statement that takes the snapshot (what happens meanwhile happens while a run holds a snapshot
 * open: PostgreSQL only, PGlite's one connection would wait); `between`, before it opens its second
 * snapshot (no transaction open). `paused` resolves when it has stopped.
 */
export function pausingDatabase(
  db: Database,
  where: 'inside' | 'between',
): { db: Database; paused: Promise<void>; release(): void } {
  let release!: () => void;
  let reached!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const paused = new Promise<void>((resolve) => (reached = resolve));
  let armed = true;
  let snapshots = 0;
  const stop = async () => {
    armed = false;
    reached();
    await gate;
  };
  const pausing = (tx: TransactionHandle): TransactionHandle => {
    let snapshot = false;
    return {
      async exec(sql: string) {
        if (sql.includes('READ ONLY')) {
          snapshot = true;
          snapshots += 1;
        }
        await tx.exec(sql);
      },
      async query(sql, params) {
        const result = await tx.query(sql, params);
        if (where === 'inside' && snapshot && armed) await stop();
        return result as never;
      },
      queryAndCommit: (sql, params) => tx.queryAndCommit(sql, params),
    };
  };
  return {
    db: {
      engine: db.engine,
      relaxed: db.relaxed,
      query: (sql, params) => db.query(sql, params),
      exec: (sql) => db.exec(sql),
      async transaction(work, options) {
        if (where === 'between' && armed && snapshots === 1) await stop();
        return db.transaction((tx) => work(pausing(tx)), options);
      },
      withConnection: <T>(work: (conn: Queryable) => Promise<T>) => db.withConnection(work),
      close: () => db.close(),
    },
    paused,
    release,
  };
}
