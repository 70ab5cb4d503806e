// One reconciliation run of one tenant and mode, from a claimed run row to its recorded result.
//
// Consistency: the whole-book checks compare figures with each other, so they are read in ONE
// snapshot (one REPEATABLE READ, READ ONLY transaction, one aggregate statement each). The checks of
// single transactions and payments go page by page, each page in a snapshot of its own: a payment,
// its entries and its events are always committed together, so within a page they agree, and a payment
// that changes after its page was read is simply seen as it was (never half of it). Nothing is locked
// (plain reads under MVCC): payouts never wait for a run. Nothing is corrected: what disagrees is
// recorded, with its evidence, and the money stays as it is.
//
// Incremental: a run asked for as `incremental` starts from its tenant and mode's checkpoint (what the
// last completed run proved: every transaction below an id, and the sums of their postings) and reads
// only what was written since: the postings added to the carried sums, the ledger transactions and the
// payments written by later transactions, the limit counters of the days those payments moved. The
// account balances, the payments' grouped figures and the closes are read whole (one row per account,
// one aggregate). What it does not see: a row the service already proved and that something else
// changed afterwards (by hand, say) — the full run finds that, weekly (RECONCILE_FULL_INTERVAL_S) and
// whenever an operator asks.
//
// Bounded: pages of fixed size, a bounded number of them, the evidence kept per check bounded (the
// rest counted), and the run's lease renewed as it goes, so a run whose process dies is seen as
// abandoned once the lease runs out.
import type { FastifyBaseLogger } from 'fastify';
import type { Database, Queryable } from '../db/database.ts';
import {
  beginRunSnapshot,
  firstPosition,
  readBooks,
  readCounterMismatches,
  readPaymentPage,
  readTransactionPage,
  type BookReading,
  type Checkpoint,
  type Page,
  type Position,
  type WrittenWindow,
} from '../db/repositories/reconciliation-reads.ts';
import {
  finishRun,
  insertDiscrepancies,
  readCheckpoint,
  recordStanding,
  renewLease,
  type Examined,
  type RunEnd,
  type RunRow,
  type RunScope,
} from '../db/repositories/reconciliation-runs.ts';
import type { Clock } from '../domain/clock.ts';
import {
  bookFindings,
  counterFindings,
  paymentFindings,
  transactionFindings,
} from '../domain/reconciliation-checks.ts';
import { DiscrepancyTally, RECONCILIATION_CHECKS, type CheckName, type Discrepancy } from '../domain/reconciliation.ts';
import type { Mode } from '../domain/partition.ts';
import { assert } from '../domain/assert.ts';

/** Discrepancies stored per check and run; the run counts the rest (`discrepancies` ≥ `stored`). */
export const DISCREPANCIES_STORED_PER_CHECK_MAX = 50;
/** Payments read per page (each with its entries and events). */
const PAYMENTS_PAGE_SIZE = 500;
/** Ledger transactions read per page (each with its postings). */
const TRANSACTIONS_PAGE_SIZE = 2000;
/** Pages of each kind one run reads at most (a run over more than 100,000,000 payments fails, saying so). */
const RUN_PAGES_MAX = 200_000;
/** The longest one statement of a run may take (PostgreSQL): the whole-book aggregates read every posting of the tenant. */
const RUN_STATEMENT_TIMEOUT_MS = 120_000;
/** A running run's lease: renewed between pages; longer than any one statement, so a live run never loses it. */
export const RUN_LEASE_MS = RUN_STATEMENT_TIMEOUT_MS + 60_000;
/** The lease is renewed once this much of it has passed. */
const LEASE_RENEW_AFTER_MS = RUN_LEASE_MS / 4;

export interface RunIdentity {
  id: string;
  tenantId: string;
  mode: Mode;
}

/**
 * Called in the transaction that records a run's end, with the discrepancies it stored; what it
 * returns, if anything, is called once that transaction has committed (a metric counts only what
 * was stored).
 */
export type DiscrepancyHook = (
  tx: Queryable,
  run: RunIdentity,
  discrepancies: readonly Discrepancy[],
) => Promise<void | (() => void)>;

export interface RunObserver {
  runFinished(result: 'clean' | 'discrepancies' | 'failed' | 'abandoned', seconds: number): void;
}

/** The run is no longer this process's: its lease ran out and another worker marked it abandoned. */
class LeaseLost extends Error {}
/** The process is stopping: the run ends at the next page. */
class Interrupted extends Error {}

/** Where a run starts: the whole history, or a checkpoint (and the run that left it). */
type Start = { scope: 'full' } | { scope: 'incremental'; since: Checkpoint; sinceRunId: string };

/** Rows per page; the defaults are PAYMENTS_PAGE_SIZE and TRANSACTIONS_PAGE_SIZE (tests page smaller). */
export interface PageSizes {
  payments: number;
  transactions: number;
}

export class ReconciliationRunner {
  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly observer: RunObserver,
    private readonly log: FastifyBaseLogger | undefined,
    private readonly onDiscrepancies: DiscrepancyHook | undefined,
    /** RECONCILE_FULL_INTERVAL_S: an incremental run whose tenant and mode was last proven whole longer ago runs full. */
    private readonly fullIntervalS: number,
    private readonly pages: PageSizes = { payments: PAYMENTS_PAGE_SIZE, transactions: TRANSACTIONS_PAGE_SIZE },
  ) {}

  /** An incremental run starts from the checkpoint, unless there is none or the last full proof is too old. */
  private async startOf(row: RunRow, run: RunIdentity): Promise<Start> {
    if (row.scope === 'full') return { scope: 'full' };
    const stored = await readCheckpoint(this.db, run);
    if (
      !stored ||
      !stored.lastFullAt ||
      stored.lastFullAt.getTime() <= this.clock.now().getTime() - this.fullIntervalS * 1000
    )
      return { scope: 'full' };
    return { scope: 'incremental', since: stored, sinceRunId: stored.runId };
  }

  /** Runs every check of a claimed (running) run and records its end; undefined if the run was lost meanwhile. */
  async execute(row: RunRow, stopping: () => boolean): Promise<RunRow | undefined> {
    const run: RunIdentity = { id: row.id, tenantId: row.tenant_id, mode: row.mode };
    const tally = new DiscrepancyTally(DISCREPANCIES_STORED_PER_CHECK_MAX);
    const examined: Examined = { payments: 0, ledgerTransactions: 0, accounts: 0, limitCounters: 0 };
    const startedMs = performance.now();
    let lastRenewalMs = this.clock.now().getTime();
    const keepLease = async () => {
      if (stopping()) throw new Interrupted();
      const now = this.clock.now().getTime();
      if (now - lastRenewalMs < LEASE_RENEW_AFTER_MS) return;
      if (!(await renewLease(this.db, run, new Date(now + RUN_LEASE_MS)))) throw new LeaseLost();
      lastRenewalMs = now;
    };
    let end: Pick<RunEnd, 'status' | 'error'> = { status: 'completed', error: null };
    let start: Start | undefined;
    let proven: Checkpoint | undefined;
    try {
      start = await this.startOf(row, run);
      const since = start.scope === 'incremental' ? start.since : undefined;
      const reading = await this.checkBooks(run, tally, examined, since);
      proven = reading.checkpoint;
      // What was written after the books' snapshot is the next run's: the walks stop at its xmax.
      const window: WrittenWindow | undefined = since
        ? { from: since.provenBelow, below: reading.snapshot.xmax }
        : undefined;
      await this.walkPages(run, tally, examined, window, keepLease);
    } catch (error) {
      if (error instanceof LeaseLost) {
        this.log?.warn(
          { runId: run.id, tenantId: run.tenantId, mode: run.mode },
          'reconciliation run lost its lease (another worker found it expired); its result is dropped',
        );
        this.observer.runFinished('abandoned', (performance.now() - startedMs) / 1000);
        return undefined;
      }
      end =
        error instanceof Interrupted
          ? { status: 'abandoned', error: 'abandoned: the process running it was stopping' }
          : { status: 'failed', error: `failed: ${(error as Error)?.message ?? String(error)}`.slice(0, 1000) };
    }
    // A run that failed before it knew where to start is recorded with the scope it was asked for.
    const scope: RunScope = start?.scope ?? row.scope;
    const sinceRunId = start?.scope === 'incremental' ? start.sinceRunId : null;
    return this.finish(
      run,
      tally,
      examined,
      { ...end, scope, sinceRunId },
      proven,
      (performance.now() - startedMs) / 1000,
    );
  }

  /** The whole-book checks, in one snapshot (since a checkpoint: its carried sums and what was written since). */
  private checkBooks(
    run: RunIdentity,
    tally: DiscrepancyTally,
    examined: Examined,
    since: Checkpoint | undefined,
  ): Promise<BookReading> {
    return this.snapshot(async (tx) => {
      const reading = await readBooks(tx, run, since);
      examined.accounts = reading.accounts;
      tally.add(bookFindings(reading.books));
      tally.ranCheck('account_balances', 'in_flight', 'prefunding', 'credit_drawn', 'revenue');
      const counters = await readCounterMismatches(tx, run, DISCREPANCIES_STORED_PER_CHECK_MAX, since);
      examined.limitCounters = counters.counters;
      tally.add(counterFindings(counters.mismatches));
      tally.addUnstored('limit_usage', counters.total - counters.mismatches.length);
      tally.ranCheck('limit_usage');
      return reading;
    });
  }

  /**
   * The page-by-page checks: the ledger transactions and the payments (since a checkpoint: only those
   * written in `window`).
   */
  private async walkPages(
    run: RunIdentity,
    tally: DiscrepancyTally,
    examined: Examined,
    window: WrittenWindow | undefined,
    keepLease: () => Promise<void>,
  ): Promise<void> {
    const { payments, transactions } = this.pages;
    // The two walks read different rows and share nothing but the tally: they go side by side, each on
    // a connection of its own. The first error ends the run; the other walk stops at its next page.
    let cause: { error: unknown } | undefined;
    const between = async () => {
      if (cause) throw new Interrupted();
      await keepLease();
    };
    const failing = (error: unknown) => {
      cause ??= { error };
    };
    await Promise.all([
      this.walk(
        (tx, after) => readTransactionPage(tx, run, after, transactions, window),
        transactions,
        window,
        between,
        (rows) => {
          examined.ledgerTransactions += rows.length;
          tally.add(transactionFindings(rows));
        },
      ).then(() => tally.ranCheck('transaction_balanced'), failing),
      this.walk(
        (tx, after) => readPaymentPage(tx, run, after, payments, window),
        payments,
        window,
        between,
        (rows) => {
          examined.payments += rows.length;
          for (const p of rows) tally.add(paymentFindings(p.payment, p.entries, p.events));
        },
      ).then(() => tally.ranCheck('payment_entries', 'outcome_events'), failing),
    ]);
    if (cause) throw cause.error;
  }

  /** Reads pages until a short one, each in its own snapshot; before each, the lease is renewed (and a stopping process stops). */
  private async walk<T>(
    read: (tx: Queryable, after: Position) => Promise<Page<T>>,
    size: number,
    window: WrittenWindow | undefined,
    between: () => Promise<void>,
    examine: (rows: T[]) => void,
  ): Promise<void> {
    let after = firstPosition(window);
    for (let page = 0; page < RUN_PAGES_MAX; page += 1) {
      await between();
      const result = await this.snapshot((tx) => read(tx, after));
      examine(result.rows);
      if (result.read < size || result.last === null) return;
      after = result.last;
    }
    throw new Error(`a run reads at most ${RUN_PAGES_MAX} pages of ${size} rows of each kind; this tenant has more`);
  }

  /** A read-only transaction that sees one snapshot of the database for all its statements. */
  private snapshot<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    return this.db.transaction(async (tx) => {
      await beginRunSnapshot(tx, RUN_STATEMENT_TIMEOUT_MS);
      return work(tx);
    });
  }

  /** Records the end, the evidence and (completed) the tenant's standing and checkpoint in one transaction. */
  private async finish(
    run: RunIdentity,
    tally: DiscrepancyTally,
    examined: Examined,
    end: Pick<RunEnd, 'status' | 'error' | 'scope' | 'sinceRunId'>,
    proven: Checkpoint | undefined,
    seconds: number,
  ): Promise<RunRow | undefined> {
    const results = tally.results();
    const stored = tally.stored();
    const finishedAt = this.clock.now();
    const committed: { afterCommit?: () => void } = {};
    const row = await this.db.transaction(async (tx) => {
      const finished = await finishRun(tx, run, {
        ...end,
        finishedAt,
        checks: results,
        discrepancyCount: tally.total,
        examined,
      });
      if (!finished) return undefined;
      await insertDiscrepancies(tx, run, stored);
      if (end.status === 'completed') {
        assert(proven, 'a completed run read the books');
        const byCheck = Object.fromEntries(RECONCILIATION_CHECKS.map((c) => [c, results[c].discrepancies])) as Record<
          CheckName,
          number
        >;
        await recordStanding(tx, run, finishedAt, byCheck, tally.total === 0, {
          ...proven,
          full: end.scope === 'full',
        });
      }
      if (stored.length > 0 && this.onDiscrepancies)
        committed.afterCommit = (await this.onDiscrepancies(tx, run, stored)) ?? undefined;
      return finished;
    });
    committed.afterCommit?.();
    if (!row) {
      this.observer.runFinished('abandoned', seconds);
      return undefined;
    }
    const result =
      end.status !== 'completed'
        ? end.status === 'failed'
          ? 'failed'
          : 'abandoned'
        : tally.total === 0
          ? 'clean'
          : 'discrepancies';
    this.observer.runFinished(result, seconds);
    const fields = {
      runId: run.id,
      tenantId: run.tenantId,
      mode: run.mode,
      scope: end.scope,
      status: end.status,
      discrepancies: tally.total,
      seconds: Math.round(seconds * 1000) / 1000,
      error: end.error ?? undefined,
    };
    if (result === 'clean') this.log?.info(fields, 'reconciliation run clean');
    else
      this.log?.warn(
        { ...fields, failing: RECONCILIATION_CHECKS.filter((c) => results[c].verdict === 'fail') },
        `reconciliation run ${result}`,
      );
    return row;
  }
}
