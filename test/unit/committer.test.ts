import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Database, Queryable, TransactionHandle } from '../../src/db/database.ts';
import { ApiError } from '../../src/domain/errors.ts';
import { BackgroundShare } from '../../src/services/background-share.ts';
import { Committer, type CommitLane } from '../../src/services/commit/committer.ts';

/** A database whose transactions only run their work: the committer's logic, without SQL. */
function fakeDatabase(): Database & { transactions: number } {
  const tx: TransactionHandle = {
    query: async () => ({ rows: [], rowCount: 0 }),
    exec: async () => undefined,
    queryAndCommit: async () => ({ rows: [], rowCount: 0 }),
  };
  const db = {
    engine: 'postgres' as const,
    transactions: 0,
    relaxed: tx,
    query: tx.query,
    exec: tx.exec,
    async transaction<T>(work: (t: TransactionHandle) => Promise<T>): Promise<T> {
      db.transactions += 1;
      return work(tx);
    },
    withConnection: async <T>(work: (c: Queryable) => Promise<T>) => work(tx),
    close: async () => undefined,
  };
  return db;
}

const A = { tenantId: 'a', mode: 'test' as const };
const B = { tenantId: 'b', mode: 'test' as const };

/** A lane that doubles its numbers, records its batches, and can be held open or made to fail. */
function lane(options: { fail?: (jobs: readonly number[], attempt: number) => unknown; gate?: Promise<void> } = {}) {
  const batches: number[][] = [];
  let attempt = 0;
  let open = 0;
  let maxOpen = 0;
  const l: CommitLane<number, number> & { batches: number[][]; maxOpen(): number } = {
    name: 'test',
    commitMax: 4,
    batches,
    maxOpen: () => maxOpen,
    async run(_tx, _partition, jobs) {
      attempt += 1;
      open += 1;
      maxOpen = Math.max(maxOpen, open);
      try {
        batches.push([...jobs]);
        if (options.gate) await options.gate;
        const failure = options.fail?.(jobs, attempt);
        if (failure) throw failure;
        return jobs.map((j) => j * 2);
      } finally {
        open -= 1;
      }
    },
  };
  return l;
}

describe('Committer', () => {
  it('commits jobs that arrive while a batch runs together in the next one, at most commitMax each', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const l = lane({ gate });
    const committer = new Committer(fakeDatabase(), { transactionsMax: 4, pendingMax: 100 });
    const results = [committer.submit(l, A, 1)];
    await new Promise((resolve) => setImmediate(resolve));
    for (let n = 2; n <= 7; n += 1) results.push(committer.submit(l, A, n));
    release();
    assert.deepEqual(await Promise.all(results), [2, 4, 6, 8, 10, 12, 14]);
    assert.deepEqual(l.batches, [[1], [2, 3, 4, 5], [6, 7]]);
  });

  it('refuses new jobs with 503 overloaded once pendingMax are waiting, and takes them again after', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const committer = new Committer(fakeDatabase(), { transactionsMax: 1, pendingMax: 3 });
    const l = lane({ gate });
    const accepted = [committer.submit(l, A, 1), committer.submit(l, A, 2), committer.submit(l, B, 3)];
    await assert.rejects(
      committer.submit(l, B, 4),
      (e: unknown) => e instanceof ApiError && e.code === 'overloaded' && e.status === 503,
    );
    release();
    assert.deepEqual(await Promise.all(accepted), [2, 4, 6]);
    assert.equal(await committer.submit(l, A, 5), 10);
    assert.equal(committer.depth, 0);
  });

  it('one failing job never fails the others: the batch is committed again job by job', async () => {
    const l = lane({ fail: (jobs) => (jobs.includes(3) ? new Error('invariant: job 3 is broken') : undefined) });
    const committer = new Committer(fakeDatabase(), { transactionsMax: 1, pendingMax: 100 });
    let release!: () => void;
    const blocker = lane({ gate: new Promise<void>((resolve) => (release = resolve)) });
    const first = committer.submit(blocker, A, 0);
    await new Promise((resolve) => setImmediate(resolve));
    const results = await Promise.allSettled(
      [1, 2, 3, 4].map((n) => committer.submit(l, A, n)).concat(release() ?? []),
    );
    await first;
    assert.deepEqual(
      results.slice(0, 4).map((r) => (r.status === 'fulfilled' ? r.value : 'rejected')),
      [2, 4, 'rejected', 8],
    );
  });

  it('runs a batch again when PostgreSQL aborts it as a deadlock victim (bounded)', async () => {
    const deadlock = Object.assign(new Error('deadlock detected'), { code: '40P01' });
    const db = fakeDatabase();
    const l = lane({ fail: (_jobs, attempt) => (attempt === 1 ? deadlock : undefined) });
    const committer = new Committer(db, { transactionsMax: 1, pendingMax: 100 });
    assert.equal(await committer.submit(l, A, 21), 42);
    assert.equal(db.transactions, 2);

    const always = lane({ fail: () => deadlock });
    await assert.rejects(committer.submit(always, A, 1), (e: unknown) => (e as { code?: string }).code === '40P01');
    assert.equal(always.batches.length, 4, 'TRANSACTION_ATTEMPTS_MAX attempts, then the error');
  });

  it('a lost database connection fails the batch as a whole (retryable), without running it job by job', async () => {
    const lost = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
    let release!: () => void;
    // Job 0 holds the lane's queue open; the batch after it loses its connection.
    const l = lane({
      gate: new Promise<void>((resolve) => (release = resolve)),
      fail: (jobs) => (jobs.includes(0) ? undefined : lost),
    });
    const committer = new Committer(fakeDatabase(), { transactionsMax: 1, pendingMax: 100 });
    const first = committer.submit(l, A, 0);
    await new Promise((resolve) => setImmediate(resolve));
    const jobs = [1, 2, 3].map((n) => committer.submit(l, A, n));
    release();
    assert.equal(await first, 0);
    for (const r of await Promise.allSettled(jobs)) assert.equal(r.status, 'rejected');
    assert.deepEqual(l.batches, [[0], [1, 2, 3]]);
  });

  it("runs one tenant's batches of two lanes side by side, and each lane's batches one at a time", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const payouts = lane({ gate });
    const outcomes = lane({ gate });
    const committer = new Committer(fakeDatabase(), { transactionsMax: 4, pendingMax: 100 });
    const results = [committer.submit(payouts, A, 1), committer.submit(outcomes, A, 2)];
    await new Promise((resolve) => setImmediate(resolve));
    results.push(committer.submit(payouts, A, 3), committer.submit(outcomes, A, 4));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(payouts.maxOpen() + outcomes.maxOpen(), 2, 'one batch of each lane at once');
    release();
    assert.deepEqual(await Promise.all(results), [2, 4, 6, 8]);
    assert.deepEqual(payouts.batches, [[1], [3]]);
    assert.deepEqual(outcomes.batches, [[2], [4]]);
    assert.equal(payouts.maxOpen(), 1);
    assert.equal(outcomes.maxOpen(), 1);
  });

  it('holds at most transactionsMax batches at once across tenants', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const l = lane({ gate });
    const committer = new Committer(fakeDatabase(), { transactionsMax: 2, pendingMax: 100 });
    const tenants = ['t1', 't2', 't3', 't4', 't5'].map((tenantId) => ({ tenantId, mode: 'test' as const }));
    const results = tenants.map((p, i) => committer.submit(l, p, i));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(l.maxOpen(), 2);
    release();
    assert.deepEqual(await Promise.all(results), [0, 2, 4, 6, 8]);
    assert.equal(l.maxOpen(), 2);
  });
});

describe('Committer and the background share', () => {
  /** A lane whose jobs are background work when they are even; each batch held open until released. */
  function backgroundLane(name: string, log: string[]) {
    const releases: Array<() => void> = [];
    const l: CommitLane<number, number> & { releaseAll(): void } = {
      name,
      commitMax: 1,
      inBackground: (jobs) => jobs.every((j) => j % 2 === 0),
      async run(_tx, _partition, jobs) {
        log.push(`${name}:${jobs[0]}`);
        await new Promise<void>((resolve) => releases.push(resolve));
        return jobs.map((j) => j * 2);
      },
      releaseAll: () => releases.splice(0).forEach((release) => release()),
    };
    return l;
  }
  const turns = async () => {
    for (let i = 0; i < 5; i += 1) await new Promise((resolve) => setImmediate(resolve));
  };

  it("while a request is in flight, background transactions of two tenants run one at a time and a request's transaction runs beside them", async () => {
    const share = new BackgroundShare();
    const log: string[] = [];
    const committer = new Committer(
      fakeDatabase(),
      { transactionsMax: 8, pendingMax: 100 },
      undefined,
      undefined,
      share,
    );
    const l = backgroundLane('payout', log);
    share.requestStarted();
    const results = [
      committer.submit(l, A, 2),
      committer.submit(l, B, 4),
      committer.submit(l, { tenantId: 'c', mode: 'test' }, 5),
    ];
    await turns();
    assert.deepEqual(
      log,
      ['payout:2', 'payout:5'],
      "tenant b's background batch waits for tenant a's; the request's job does not",
    );
    l.releaseAll();
    await turns();
    assert.deepEqual(log, ['payout:2', 'payout:5', 'payout:4']);
    share.requestEnded();
    l.releaseAll();
    assert.deepEqual(await Promise.all(results), [4, 8, 10]);
  });

  it('with no request in flight, background transactions of several tenants run side by side', async () => {
    const share = new BackgroundShare();
    const log: string[] = [];
    const committer = new Committer(
      fakeDatabase(),
      { transactionsMax: 8, pendingMax: 100 },
      undefined,
      undefined,
      share,
    );
    const l = backgroundLane('payout', log);
    const results = [committer.submit(l, A, 2), committer.submit(l, B, 4)];
    await turns();
    assert.deepEqual(log, ['payout:2', 'payout:4']);
    l.releaseAll();
    assert.deepEqual(await Promise.all(results), [4, 8]);
  });
});
