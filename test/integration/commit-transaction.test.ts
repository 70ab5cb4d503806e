// On PostgreSQL a commit's BEGIN is pipelined with its lock statement, and its write with its COMMIT.
// Were BEGIN ever to fail on a live connection, the lock statement would run committed on its own: it
// must then write nothing. A write whose own checks fail must leave nothing committed.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { lockPayoutCommit, type PayoutCommitLocks } from '../../src/db/commit/payout-locks.ts';
import { writePayoutCommit, type PayoutCommitWrite } from '../../src/db/commit/payout-commit.ts';
import { startTestApp, type TestApp } from '../support/harness.ts';
import { fundedTenant } from '../support/payouts.ts';

describe('a commit transaction, whose first and last statements are pipelined', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp();
  });
  after(async () => {
    await t.close();
  });

  function locks(key: string): PayoutCommitLocks {
    const now = new Date();
    return {
      now,
      expiresAt: new Date(now.getTime() + 86_400_000),
      keys: [
        { key, fingerprint: 'f'.repeat(64), paymentId: randomUUID(), lockedUntil: new Date(now.getTime() + 60_000) },
      ],
      quoteIds: [],
      day: '2026-11-26',
      counters: [{ kind: 'tenant', subjectId: randomUUID(), method: 'pago_movil' }],
      accounts: [{ asset: 'BS', kind: 'revenue' }],
      monthly: [],
      monthStart: '2026-11-01',
    };
  }

  async function rows(tenantId: string): Promise<{ keys: number; counters: number; accounts: number }> {
    const count = async (sql: string) => Number((await t.db.query<{ n: string }>(sql, [tenantId])).rows[0]!.n);
    return {
      keys: await count('SELECT count(*)::text AS n FROM idempotency_keys WHERE tenant_id = $1'),
      counters: await count('SELECT count(*)::text AS n FROM limit_usage WHERE tenant_id = $1'),
      accounts: await count(
        "SELECT count(*)::text AS n FROM ledger_accounts WHERE tenant_id = $1 AND kind = 'revenue'",
      ),
    };
  }

  it('claims no key, creates no counter and no account; inside a commit transaction it does', async () => {
    const { tenantId } = await fundedTenant(t);
    const partition = { tenantId, mode: 'test' as const };
    const before = await rows(tenantId);

    const held = await lockPayoutCommit(t.db, partition, locks('outside')).catch((error: unknown) => error);
    assert.deepEqual(await rows(tenantId), before, 'nothing written outside the transaction');
    // Its accounts are missing, so the caller would run the commit again (after BEGIN's own error).
    assert.ok(held instanceof Error && /stale read in a commit/.test(held.message), String(held));

    await t.db.transaction((tx) => lockPayoutCommit(tx, partition, locks('inside')), { commit: true });
    assert.deepEqual(await rows(tenantId), {
      keys: before.keys + 1,
      counters: before.counters + 1,
      accounts: before.accounts + 1,
    });
  });

  it('inserts only in a transaction marked as a commit, whatever the planner settings', async () => {
    const { tenantId } = await fundedTenant(t);
    const partition = { tenantId, mode: 'test' as const };
    const before = await rows(tenantId);

    // Not a commit, though it plans as a commit once did (the old mark): the lock statement writes nothing.
    const unmarked = await t.db.transaction(async (tx) => {
      await tx.exec('SET LOCAL enable_seqscan = off');
      return lockPayoutCommit(tx, partition, locks('unmarked')).catch((error: unknown) => error);
    });
    assert.ok(unmarked instanceof Error && /stale read in a commit/.test(unmarked.message), String(unmarked));
    assert.deepEqual(await rows(tenantId), before, 'nothing written by a transaction not marked as a commit');

    // A commit with the planner's defaults: it does.
    await t.db.transaction(
      async (tx) => {
        await tx.exec('SET LOCAL enable_seqscan = on');
        await lockPayoutCommit(tx, partition, locks('marked'));
      },
      { commit: true },
    );
    assert.deepEqual(await rows(tenantId), {
      keys: before.keys + 1,
      counters: before.counters + 1,
      accounts: before.accounts + 1,
    });
    const mark = await t.db.query<{ mark: string | null }>("SELECT current_setting('bolivar.in_commit', true) AS mark");
    assert.notEqual(mark.rows[0]!.mark, 'on', 'the mark ends with its transaction');
  });

  it('a write that goes out with the COMMIT and fails its own checks commits nothing', async () => {
    const { tenantId } = await fundedTenant(t);
    const partition = { tenantId, mode: 'test' as const };
    const write = (kind: 'prefunding' | 'fx', paymentId: string): PayoutCommitWrite => ({
      now: new Date(),
      consumedQuotes: [],
      payments: [],
      transitions: [],
      entries: [],
      usage: { day: '2026-11-26', rows: [] },
      // A zero change of one account: the tenant has a prefunding account, and no fx account.
      accountDeltas: [{ account: { asset: 'BS', kind }, delta: 0n }],
      events: [{ paymentId, type: 'payment.failed', payload: { test: true } }],
      keyAnswers: [],
      keyReleases: [],
    });
    const events = async (paymentId: string) =>
      Number(
        (
          await t.db.query<{ n: string }>(
            'SELECT count(*)::text AS n FROM outbox_events WHERE tenant_id = $1 AND aggregate_id = $2',
            [tenantId, paymentId],
          )
        ).rows[0]!.n,
      );

    const failing = randomUUID();
    await assert.rejects(
      t.db.transaction((tx) => writePayoutCommit(tx, partition, write('fx', failing), { last: true }), {
        commit: true,
      }),
      /invariant: the payout commit wrote 0 quote consumptions, 0 payments, 0 limit counters, 0 account balances/,
    );
    assert.equal(await events(failing), 0, 'the event written before the failed check was rolled back');

    const passing = randomUUID();
    await t.db.transaction((tx) => writePayoutCommit(tx, partition, write('prefunding', passing), { last: true }), {
      commit: true,
    });
    assert.equal(await events(passing), 1, 'committed with its last statement');
  });
});
