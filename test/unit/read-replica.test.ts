// The read replica's routing and lag verdict, with stand-ins for both servers: the WAL positions and
// the clock are the test's, so each verdict is exact. The real replica: test/process/read-replica.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Database, Queryable, QueryResult } from '../../src/db/database.ts';
import { ReplicaReads, type FallbackReason } from '../../src/db/read-replica.ts';
import { ReplicaLag } from '../../src/db/replica-lag.ts';

/** A server answering the sampler's two questions from fields the test moves, and any other query with `rows`. */
class FakeServer implements Queryable {
  flushed = 0n;
  replayed: bigint | null = 0n;
  standby = true;
  down: Error | undefined;
  queries: string[] = [];
  constructor(readonly name: string) {}
  async query<Row>(sql: string): Promise<QueryResult<Row>> {
    if (this.down) throw this.down;
    this.queries.push(sql);
    if (sql.includes('pg_current_wal_flush_lsn')) return { rows: [{ lsn: this.flushed } as Row], rowCount: 1 };
    if (sql.includes('pg_last_wal_replay_lsn'))
      return { rows: [{ standby: this.standby, replayed: this.replayed } as Row], rowCount: 1 };
    return { rows: [{ server: this.name } as Row], rowCount: 1 };
  }
  async exec(): Promise<void> {}
}

function refused(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5433'), { code: 'ECONNREFUSED' });
}

function setUp(maxLagMs = 1_000) {
  let now = 1_000_000;
  const primary = new FakeServer('primary');
  const replica = new FakeServer('replica');
  const lag = new ReplicaLag(primary, replica, { maxLagMs, nowMs: () => now });
  const fallbacks: FallbackReason[] = [];
  const primaryDb = Object.assign(primary, { engine: 'postgres', relaxed: primary }) as unknown as Database;
  const reads = new ReplicaReads(primaryDb, replica as unknown as Database, lag, {
    fallback: (reason) => fallbacks.push(reason),
  });
  const served = async () => (await reads.query<{ server: string }>('SELECT 1')).rows[0]!.server;
  return { primary, replica, lag, reads, fallbacks, served, advance: (ms: number) => (now += ms) };
}

describe('read replica: the lag verdict', () => {
  it('an idle primary keeps a caught-up replica serving, however long since its last transaction', async () => {
    const s = setUp();
    assert.equal(await s.served(), 'primary', 'not measured yet');
    assert.deepEqual(s.fallbacks, ['unreachable']);
    s.primary.flushed = 500n;
    s.replica.replayed = 500n;
    for (let i = 0; i < 10; i += 1) {
      await s.lag.sample();
      s.advance(250);
      assert.equal(s.lag.refusal(), undefined, `sample ${i}`);
    }
    assert.equal(await s.served(), 'replica');
    assert.equal(s.lag.lagMs(), 250);
  });

  it('a replica that stops replaying is refused once it lacks what the primary had more than the bound ago', async () => {
    const s = setUp(1_000);
    s.primary.flushed = 100n;
    s.replica.replayed = 100n;
    await s.lag.sample();
    assert.equal(await s.served(), 'replica');
    // Writes on the primary; the replica replays nothing more.
    s.primary.flushed = 200n;
    s.advance(250);
    await s.lag.sample();
    assert.equal(s.lag.refusal(), undefined, 'behind by less than the bound since the last replayed sample');
    s.advance(800);
    await s.lag.sample();
    assert.equal(s.lag.lagMs(), 1_050);
    assert.equal(await s.served(), 'primary');
    assert.deepEqual(s.fallbacks, ['lag']);
    // It catches up: the newest sample replayed dates it.
    s.replica.replayed = 200n;
    await s.lag.sample();
    assert.equal(s.lag.lagMs(), 0);
    assert.equal(await s.served(), 'replica');
  });

  it('a replica first seen behind is not trusted until it has replayed a sampled position', async () => {
    const s = setUp(1_000);
    s.primary.flushed = 900n;
    s.replica.replayed = 100n;
    await s.lag.sample();
    assert.equal(s.lag.refusal(), 'lag');
    s.advance(100);
    await s.lag.sample();
    assert.equal(s.lag.refusal(), 'lag');
    s.replica.replayed = 900n;
    await s.lag.sample();
    assert.equal(s.lag.refusal(), undefined);
    assert.equal(s.lag.lagMs(), 0, 'dated by the newest sample it has replayed: the one just taken');
  });

  it('a server out of recovery serves nothing; an unreachable one neither, until a sample reaches it again', async () => {
    const s = setUp();
    s.replica.standby = false;
    s.replica.replayed = null;
    await s.lag.sample();
    assert.equal(s.lag.refusal(), 'not_standby');
    s.replica.standby = true;
    s.replica.replayed = 0n;
    s.replica.down = refused();
    await s.lag.sample();
    assert.equal(s.lag.refusal(), 'unreachable');
    assert.equal(s.lag.up(), false);
    s.replica.down = undefined;
    await s.lag.sample();
    assert.equal(s.lag.refusal(), undefined);
  });
});

describe('read replica: a failing replica never fails the read', () => {
  it('a connection failure is retried once on the primary and marks the replica unreachable', async () => {
    const s = setUp();
    await s.lag.sample();
    assert.equal(await s.served(), 'replica');
    s.replica.down = refused();
    assert.equal(await s.served(), 'primary');
    assert.deepEqual(s.fallbacks, ['query_failed']);
    assert.equal(await s.served(), 'primary');
    assert.deepEqual(
      s.fallbacks,
      ['query_failed', 'unreachable'],
      'no second try of the replica before a sample reaches it',
    );
  });

  it('a conflict with recovery runs the query on the primary, and leaves the replica serving', async () => {
    const s = setUp();
    await s.lag.sample();
    s.replica.down = Object.assign(new Error('canceling statement due to conflict with recovery'), { code: '40001' });
    assert.equal(await s.served(), 'primary');
    s.replica.down = undefined;
    assert.equal(await s.served(), 'replica');
    assert.deepEqual(s.fallbacks, ['query_failed']);
  });

  it('a statement timeout is not run again on the primary', async () => {
    const s = setUp();
    await s.lag.sample();
    s.replica.down = Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
    await assert.rejects(s.served(), /statement timeout/);
    assert.deepEqual(s.fallbacks, []);
  });

  it('an error of the query itself is not hidden by a second run on the primary', async () => {
    const s = setUp();
    await s.lag.sample();
    s.replica.down = Object.assign(new Error('syntax error'), { code: '42601' });
    await assert.rejects(s.served(), /syntax error/);
    assert.deepEqual(s.fallbacks, []);
  });

  it('transactions and dedicated connections are the primary’s', async () => {
    const s = setUp();
    await s.lag.sample();
    let primaryTransactions = 0;
    (s.primary as unknown as { transaction: () => Promise<string> }).transaction = async () => {
      primaryTransactions += 1;
      return 'primary';
    };
    assert.equal(await s.reads.transaction(async () => 'work'), 'primary');
    assert.equal(primaryTransactions, 1);
  });
});
