import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  DB_CONNECT_RETRY_MAX_MS,
  DatabaseUnreachableError,
  describeDatabase,
  withDatabaseWait,
} from '../../src/db/connect-wait.ts';

function scripted(failures: unknown[]) {
  let now = 0;
  const slept: number[] = [];
  const retries: Array<{ attempt: number; error: string; retryInMs: number }> = [];
  let calls = 0;
  const work = async () => {
    calls += 1;
    const failure = failures.shift();
    if (failure !== undefined) throw failure;
    return 'migrated';
  };
  const options = (waitS: number) => ({
    waitS,
    database: '127.0.0.1:5432/bolivar',
    onRetry: (r: { attempt: number; error: string; retryInMs: number }) => retries.push(r),
    nowMs: () => now,
    sleep: async (ms: number) => {
      slept.push(ms);
      now += ms;
    },
  });
  return { work, options, slept, retries, calls: () => calls, advance: (ms: number) => (now += ms) };
}

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
const startingUp = Object.assign(new Error('the database system is starting up'), { code: '57P03' });

describe('a start waits for PostgreSQL (DB_CONNECT_WAIT_S)', () => {
  it('retries transient failures with a doubling, logged wait until the database answers', async () => {
    const s = scripted([
      refused,
      reset,
      startingUp,
      new Error('migration 001_x failed: Connection terminated unexpectedly', { cause: reset }),
    ]);
    assert.equal(await withDatabaseWait(s.work, s.options(60)), 'migrated');
    assert.equal(s.calls(), 5);
    assert.deepEqual(s.slept, [250, 500, 1000, 2000]);
    assert.deepEqual(
      s.retries.map((r) => [r.attempt, r.error]),
      [
        [1, refused.message],
        [2, reset.message],
        [3, startingUp.message],
        [4, 'migration 001_x failed: Connection terminated unexpectedly'],
      ],
    );
  });

  it(`waits at most ${DB_CONNECT_RETRY_MAX_MS} ms between attempts, and gives up past the bound naming the database`, async () => {
    const s = scripted(Array.from({ length: 100 }, () => refused));
    await assert.rejects(withDatabaseWait(s.work, s.options(30)), (error: unknown) => {
      assert.ok(error instanceof DatabaseUnreachableError);
      assert.equal(
        error.message,
        `PostgreSQL at 127.0.0.1:5432/bolivar did not answer within 30 s (DB_CONNECT_WAIT_S=30); last error: ${refused.message}. Check that it runs and that DATABASE_URL names it.`,
      );
      return true;
    });
    assert.ok(Math.max(...s.slept) <= DB_CONNECT_RETRY_MAX_MS);
    assert.equal(
      s.slept.reduce((a, b) => a + b, 0),
      30_000,
      'it waited the whole bound, no more',
    );
  });

  it('does not wait for what will not change (a wrong password, a missing database)', async () => {
    const wrongPassword = Object.assign(new Error('password authentication failed for user "bds"'), { code: '28P01' });
    const s = scripted([wrongPassword]);
    await assert.rejects(withDatabaseWait(s.work, s.options(60)), wrongPassword);
    assert.equal(s.calls(), 1);
    assert.deepEqual(s.slept, []);
  });

  it('DB_CONNECT_WAIT_S=0 tries once', async () => {
    const s = scripted([refused]);
    await assert.rejects(withDatabaseWait(s.work, s.options(0)), DatabaseUnreachableError);
    assert.equal(s.calls(), 1);
  });

  it('names the database by host, port and name, never by its user or password', () => {
    assert.equal(
      describeDatabase('postgres://bds:s3cret@db.internal:6432/bolivar?sslmode=require'),
      'db.internal:6432/bolivar',
    );
    assert.equal(describeDatabase('postgresql://bds:s3cret@db.internal/bolivar'), 'db.internal:5432/bolivar');
    assert.equal(describeDatabase('postgres://bds:s3cret@[::1]:5433/my%20db'), '[::1]:5433/my db');
  });
});
