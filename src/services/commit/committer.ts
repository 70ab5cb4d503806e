import type { FastifyBaseLogger } from 'fastify';
import { isTransientDatabaseError, type Database, type TransactionHandle } from '../../db/database.ts';
import { inTransaction } from '../../db/commit/transaction.ts';
import { overloaded } from '../../domain/errors.ts';
import type { Partition } from '../../domain/partition.ts';
import type { BackgroundShare } from '../background-share.ts';
import { assert } from '../../domain/assert.ts';

type Queue = { partition: Partition; lane: CommitLane<unknown, unknown>; items: Item[]; draining: boolean };

/** One kind of commit the committer runs: payouts, or outcomes. */
export interface CommitLane<Job, Result> {
  readonly name: string;
  /** The most jobs of this lane in one transaction. */
  readonly commitMax: number;
  /**
   * Runs one commit in `tx` (locks, decides, writes): one result per job, in order. Throws only when
   * the transaction must not commit; the committer then retries or isolates.
   */
  run(tx: TransactionHandle, partition: Partition, jobs: readonly Job[]): Promise<Result[]>;
  /** Jobs that are background work (a payout batch's items): their transaction runs in the background share. */
  inBackground?(jobs: readonly Job[]): boolean;
  /** Once the commit has committed: what may only happen after (logs, metrics). Must not throw. */
  afterCommit?(partition: Partition, jobs: readonly Job[], results: readonly Result[]): void;
}

/** Told of every commit transaction (the metrics). Must not throw. */
export interface CommitObserver {
  commit(lane: string, jobs: number, seconds: number, committed: boolean): void;
}

export interface CommitterSettings {
  /** Commit transactions in flight at once, across tenants: the committer's share of the pool. */
  transactionsMax: number;
  /** Jobs waiting across all tenants; past it `submit` answers 503 `overloaded`. */
  pendingMax: number;
}

interface Item {
  job: unknown;
  resolve(result: unknown): void;
  reject(error: unknown): void;
}

/**
 * A commit transaction (TransactionOptions.commit), whose every statement finds its rows by key
 * (TransactionOptions.seqScans false: payout c16 872/s with it, 341/s without, −61 %; docs/scaling.md, "Keyed planner").
 */
const COMMIT = { commit: true, seqScans: false } as const;

/**
 * Group commit for every money writer. Jobs of one tenant, mode and lane queue together; while a
 * commit of theirs is committing, the next ones wait and then commit together in one transaction — one
 * lock of the tenant's hot rows per commit instead of per job. A lone job commits at once (a commit of
 * one). Commits of one tenant and lane run one at a time in this process; a payout commit and an
 * outcome commit of the same tenant run side by side, because they hold different hot rows (each lane
 * has its own row of the in-flight account, db/commit/README.md) and take their locks in the one lock
 * order, which keeps them, and every other process's commits, deadlock-free.
 *
 * Bounded: at most `pendingMax` jobs wait (then 503 `overloaded`, nothing done), at most
 * `transactionsMax` commits hold a connection at once, at most `lane.commitMax` jobs per commit. A commit
 * that PostgreSQL aborts as a deadlock victim is run again (bounded); one that fails otherwise is run
 * again job by job, so one bad job never fails the others.
 */
export class Committer {
  private readonly queues = new Map<string, Queue>();
  /** Each lane's number in queue keys (lanes are few and live as long as the committer). */
  private readonly laneIds = new Map<CommitLane<unknown, unknown>, number>();
  private pending = 0;
  private inFlight = 0;
  private readonly slotWaiters: Array<() => void> = [];

  constructor(
    private readonly db: Database,
    private readonly settings: CommitterSettings,
    private readonly log?: FastifyBaseLogger,
    private readonly observer?: CommitObserver,
    private readonly background?: BackgroundShare,
  ) {
    assert(settings.transactionsMax >= 1 && settings.pendingMax >= 1, 'committer bounds must be positive');
  }

  /** Jobs waiting or committing: a gauge for operators and tests. */
  get depth(): number {
    return this.pending;
  }

  submit<Job, Result>(lane: CommitLane<Job, Result>, partition: Partition, job: Job): Promise<Result> {
    if (this.pending >= this.settings.pendingMax) return Promise.reject(overloaded('write queue full'));
    const anyLane = lane as CommitLane<unknown, unknown>;
    let laneId = this.laneIds.get(anyLane);
    if (laneId === undefined) this.laneIds.set(anyLane, (laneId = this.laneIds.size));
    const key = `${partition.tenantId}/${partition.mode}/${laneId}`;
    let queue = this.queues.get(key);
    if (!queue) {
      queue = { partition, lane: anyLane, items: [], draining: false };
      this.queues.set(key, queue);
    }
    this.pending += 1;
    const result = new Promise<Result>((resolve, reject) =>
      queue.items.push({ job, resolve: resolve as (r: unknown) => void, reject }),
    );
    if (!queue.draining) void this.drain(key, queue);
    return result;
  }

  private async drain(key: string, queue: Queue): Promise<void> {
    queue.draining = true;
    try {
      while (queue.items.length > 0) {
        // The commit takes the lane's jobs in arrival order.
        const commit = queue.items.splice(0, queue.lane.commitMax);
        const run = () => this.withSlot(() => this.runCommit(queue.partition, queue.lane, commit));
        if (this.background && queue.lane.inBackground?.(commit.map((item) => item.job)))
          await this.background.run(run);
        else await run();
      }
    } finally {
      queue.draining = false;
      if (queue.items.length === 0) this.queues.delete(key);
      else void this.drain(key, queue);
    }
  }

  private async withSlot<T>(work: () => Promise<T>): Promise<T> {
    while (this.inFlight >= this.settings.transactionsMax)
      await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    this.inFlight += 1;
    try {
      return await work();
    } finally {
      this.inFlight -= 1;
      this.slotWaiters.shift()?.();
    }
  }

  /** Never throws: every item is resolved or rejected. */
  private async runCommit(
    partition: Partition,
    lane: CommitLane<unknown, unknown>,
    commit: readonly Item[],
  ): Promise<void> {
    const jobs = commit.map((item) => item.job);
    let results: unknown[];
    const startedAt = performance.now();
    try {
      results = await inTransaction(this.db, (tx) => lane.run(tx, partition, jobs), COMMIT);
      assert(
        results.length === commit.length,
        `a ${lane.name} commit of ${commit.length} gave ${results.length} results`,
      );
      this.observer?.commit(lane.name, commit.length, (performance.now() - startedAt) / 1000, true);
    } catch (error) {
      this.observer?.commit(lane.name, commit.length, (performance.now() - startedAt) / 1000, false);
      if (commit.length > 1 && !isTransientDatabaseError(error)) {
        // Isolate whichever job broke the commit: the others must not fail with it.
        this.log?.warn(
          { lane: lane.name, jobs: commit.length, message: (error as Error)?.message },
          'commit failed; committing its jobs one by one',
        );
        for (const item of commit) await this.runCommit(partition, lane, [item]);
        return;
      }
      for (const item of commit) {
        this.pending -= 1;
        item.reject(error);
      }
      return;
    }
    try {
      lane.afterCommit?.(partition, jobs, results);
    } catch (error) {
      this.log?.error({ err: error, lane: lane.name }, 'after-commit step failed');
    }
    commit.forEach((item, i) => {
      this.pending -= 1;
      item.resolve(results[i]);
    });
  }
}
