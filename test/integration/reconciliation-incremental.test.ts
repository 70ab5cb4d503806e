// The incremental proof: a run started from a checkpoint reads only what was written since, yet
// carries the tenant's whole-book figures forward exactly — the checkpoint's sums equal a sum of every
// posting — including a transaction that began before a run's snapshot and committed after it. What it
// cannot see (a row already proven, changed afterwards by hand) the full proof finds. The schedule's
// runs are incremental, the first and one past RECONCILE_FULL_INTERVAL_S full.
//
// A checkpoint is the xmin of the run's snapshot: a writing transaction open anywhere on the server
// (another test file's database included) holds it back, and the next run then reads more than the
// minimum — never less. So the figures are compared with what lies below the checkpoint the database
// reports, and a test that needs the checkpoint past some write runs again until it is (bounded).
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import type { RunRow } from '../../src/db/repositories/reconciliation-runs.ts';
import { ManualClock } from '../support/clock.ts';
import { ReconciliationWorker } from '../../src/workers/reconciliation.ts';
import { createTestDatabase, ENGINE, startTestApp, type TestApp, type TestDatabase } from '../support/harness.ts';
import { beneficiary, fundedTenant, payout, type FundedTenant } from '../support/payouts.ts';
import { reconciliationService } from '../support/reconciliation.ts';

/** How often, and how long apart, a test runs again for its checkpoint to pass a write. */
const PAST_ATTEMPTS_MAX = 100;
const PAST_WAIT_MS = 200;

describe(`incremental reconciliation on ${ENGINE}`, () => {
  let t: TestApp;
  let clock: ManualClock;
  let database: TestDatabase;

  before(async () => {
    clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
    database = await createTestDatabase();
    t = await startTestApp({ clock, database, env: { ROLE: 'api', RECONCILE_INTERVAL_S: '0' } });
  });
  after(async () => {
    await t.close();
    await database.drop();
  });

  /** Queues a run of the tenant's test mode with the given scope, runs it here, and reads it back. */
  async function reconcile(tenantId: string, scope: 'full' | 'incremental'): Promise<RunRow> {
    const [queued] = await t.services.reconciliation.request({ tenantId, mode: 'test', scope });
    await t.services.reconciliation.drain();
    const { run } = await t.services.reconciliation.get(queued!.id);
    assert.equal(run.status, 'completed', run.error ?? '');
    return run;
  }

  /** Every posting of the tenant's test mode, summed by entry kind, asset and account. */
  async function postingSums(tenantId: string): Promise<string[]> {
    const { rows } = await t.db.query<{ line: string }>(
      `SELECT t.kind || ' ' || p.asset || '/' || p.account_kind || ' ' || sum(p.amount)::text AS line
         FROM ledger_postings p JOIN ledger_transactions t ON t.tenant_id = p.tenant_id AND t.id = p.transaction_id
        WHERE p.tenant_id = $1 AND p.mode = 'test' GROUP BY t.kind, p.asset, p.account_kind`,
      [tenantId],
    );
    return rows.map((r) => r.line).sort();
  }

  /** The same, of the transactions below `xact` only (and those written before transactions were marked). */
  async function postingSumsBelow(tenantId: string, xact: string): Promise<string[]> {
    const { rows } = await t.db.query<{ line: string }>(
      `SELECT t.kind || ' ' || p.asset || '/' || p.account_kind || ' ' || sum(p.amount)::text AS line
         FROM ledger_postings p JOIN ledger_transactions t ON t.tenant_id = p.tenant_id AND t.id = p.transaction_id
        WHERE p.tenant_id = $1 AND p.mode = 'test' AND (t.written_xact IS NULL OR t.written_xact < $2::xid8) GROUP BY t.kind, p.asset, p.account_kind`,
      [tenantId, xact],
    );
    return rows.map((r) => r.line).sort();
  }

  /** Where the tenant's checkpoint stands: every transaction below it proven. */
  async function provenBelow(tenantId: string): Promise<string> {
    const { rows } = await t.db.query<{ x: string }>(
      `SELECT proven_below::text AS x FROM reconciliation_partitions WHERE tenant_id = $1 AND mode = 'test'`,
      [tenantId],
    );
    return rows[0]!.x;
  }

  /** The id of the newest transaction that wrote the tenant's payments or entries. */
  async function lastWrite(tenantId: string): Promise<string> {
    const { rows } = await t.db.query<{ x: string }>(
      `SELECT greatest((SELECT max(written_xact) FROM payments WHERE tenant_id = $1), (SELECT max(written_xact) FROM ledger_transactions WHERE tenant_id = $1))::text AS x`,
      [tenantId],
    );
    return rows[0]!.x;
  }

  /**
   * Runs `scope` until the checkpoint is past `xact` (a transaction open elsewhere on the server may
   * hold it back for a while); answers the last run.
   */
  async function reconcilePast(tenantId: string, scope: 'full' | 'incremental', xact: string): Promise<RunRow> {
    for (let attempt = 1; ; attempt += 1) {
      const run = await reconcile(tenantId, scope);
      const below = await provenBelow(tenantId);
      if (BigInt(below) > BigInt(xact)) return run;
      if (attempt >= PAST_ATTEMPTS_MAX)
        throw new Error(`the checkpoint stayed at ${below}, not past ${xact}, after ${attempt} runs`);
      await new Promise((resolve) => setTimeout(resolve, PAST_WAIT_MS));
    }
  }

  /** The sums the tenant's checkpoint carries, in the same form. */
  async function carriedSums(tenantId: string): Promise<string[]> {
    const { rows } = await t.db.query<{
      proven_postings: Array<{ kind: string; asset: string; account: string; amount: string }>;
    }>(`SELECT proven_postings FROM reconciliation_partitions WHERE tenant_id = $1 AND mode = 'test'`, [tenantId]);
    return rows[0]!.proven_postings.map((p) => `${p.kind} ${p.asset}/${p.account} ${p.amount}`).sort();
  }

  async function pay(tenant: FundedTenant, nationalId: string, expected: string): Promise<string> {
    const made = await payout(tenant.api, { beneficiary: beneficiary(nationalId) });
    assert.equal(made.status, 201, made.raw);
    assert.equal(made.body.status, expected, made.raw);
    return made.body.id as string;
  }

  it('proves only what was written since the last run, and carries the sums of everything before it exactly', async () => {
    const tenant = await fundedTenant(t);
    for (const id of ['V99990001', 'V99990004', 'V30000001', 'V99990001'])
      await pay(tenant, id, id === 'V99990004' ? 'failed' : id === 'V30000001' ? 'submitted' : 'settled');

    const full = await reconcile(tenant.tenantId, 'full');
    assert.equal(full.scope, 'full');
    assert.equal(full.discrepancy_count, 0n, JSON.stringify(full.checks));
    assert.equal(full.examined.payments, 4);
    const fullBelow = await provenBelow(tenant.tenantId);
    assert.deepEqual(await carriedSums(tenant.tenantId), await postingSumsBelow(tenant.tenantId, fullBelow));

    await pay(tenant, 'V99990001', 'settled');
    await pay(tenant, 'V99990004', 'failed');
    const writtenSince = async (table: 'payments' | 'ledger_transactions', xact: string) =>
      (
        await t.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1 AND written_xact >= $2::xid8`,
          [tenant.tenantId, xact],
        )
      ).rows[0]!.n;
    const incremental = await reconcile(tenant.tenantId, 'incremental');
    assert.equal(incremental.scope, 'incremental');
    assert.equal(incremental.since_run_id, full.id, 'it started from the full run’s checkpoint');
    assert.equal(incremental.discrepancy_count, 0n, JSON.stringify(incremental.checks));
    assert.equal(
      incremental.examined.payments,
      await writtenSince('payments', fullBelow),
      'the payments written since the checkpoint',
    );
    assert.equal(incremental.examined.ledgerTransactions, await writtenSince('ledger_transactions', fullBelow));
    assert.ok(incremental.examined.payments! >= 2 && incremental.examined.payments! <= 6);
    assert.deepEqual(
      await carriedSums(tenant.tenantId),
      await postingSumsBelow(tenant.tenantId, await provenBelow(tenant.tenantId)),
    );

    // Once the checkpoint is past every write, it carries the sums of every posting, and a run reads nothing.
    await reconcilePast(tenant.tenantId, 'incremental', await lastWrite(tenant.tenantId));
    assert.deepEqual(await carriedSums(tenant.tenantId), await postingSums(tenant.tenantId));
    const nothingNew = await reconcile(tenant.tenantId, 'incremental');
    assert.equal(nothingNew.examined.payments, 0);
    assert.equal(nothingNew.discrepancy_count, 0n);

    const again = await reconcile(tenant.tenantId, 'full');
    assert.equal(again.discrepancy_count, 0n);
    assert.equal(again.examined.payments, 6);
  });

  it('a payment written since the checkpoint is proven again; a row proven before and changed by hand waits for the full proof', async () => {
    const tenant = await fundedTenant(t);
    const old = await pay(tenant, 'V99990001', 'settled');
    await reconcilePast(tenant.tenantId, 'full', await lastWrite(tenant.tenantId));
    const fresh = await pay(tenant, 'V99990001', 'settled');
    const dropEvent = (id: string) =>
      t.db.query(
        `DELETE FROM outbox_events WHERE tenant_id = $1 AND aggregate_id = $2 AND event_type = 'payment.settled'`,
        [tenant.tenantId, id],
      );
    await dropEvent(fresh);
    await dropEvent(old);

    const incremental = await reconcile(tenant.tenantId, 'incremental');
    const found = await t.services.reconciliation.get(incremental.id);
    assert.deepEqual(
      found.discrepancies.map((d) => `${d.check_name} ${d.payment_id} ${d.facet}`),
      [`outcome_events ${fresh} payment.settled`],
      'the new payment is proven; the one proven before is not read again',
    );

    const full = await reconcile(tenant.tenantId, 'full');
    const all = await t.services.reconciliation.get(full.id);
    assert.deepEqual(
      all.discrepancies.map((d) => `${d.check_name} ${d.payment_id} ${d.facet}`).sort(),
      [`outcome_events ${fresh} payment.settled`, `outcome_events ${old} payment.settled`].sort(),
    );
  });

  it(
    'a ledger transaction that began before a run and committed after it is in the next run’s sums',
    { skip: ENGINE !== 'postgres' ? 'needs a second connection (PostgreSQL)' : false },
    async () => {
      const tenant = await fundedTenant(t);
      await pay(tenant, 'V99990001', 'settled');
      await reconcilePast(tenant.tenantId, 'full', await lastWrite(tenant.tenantId));

      // A funding written by hand the way the service writes one, left open across a run.
      const writer = new pg.Client({ connectionString: database.url });
      await writer.connect();
      try {
        await writer.query('BEGIN');
        const id = randomUUID();
        await writer.query(
          `INSERT INTO ledger_transactions (tenant_id, mode, id, kind) VALUES ($1, 'test', $2, 'funding')`,
          [tenant.tenantId, id],
        );
        await writer.query(
          `INSERT INTO ledger_postings (tenant_id, transaction_id, mode, asset, account_kind, amount) VALUES ($1, $2, 'test', 'BS', 'treasury', 777), ($1, $2, 'test', 'BS', 'prefunding', -777)`,
          [tenant.tenantId, id],
        );
        await writer.query(
          `UPDATE ledger_accounts SET balance = balance + 777 WHERE tenant_id = $1 AND mode = 'test' AND asset = 'BS' AND kind = 'treasury'`,
          [tenant.tenantId],
        );
        await writer.query(
          `UPDATE ledger_accounts SET balance = balance - 777 WHERE tenant_id = $1 AND mode = 'test' AND asset = 'BS' AND kind = 'prefunding'`,
          [tenant.tenantId],
        );

        const during = await reconcile(tenant.tenantId, 'incremental');
        assert.equal(during.discrepancy_count, 0n, 'the open transaction is not in its snapshot');
        await writer.query('COMMIT');
      } finally {
        await writer.end();
      }

      const after = await reconcilePast(tenant.tenantId, 'incremental', await lastWrite(tenant.tenantId));
      assert.equal(after.discrepancy_count, 0n, JSON.stringify(after.checks));
      assert.deepEqual(
        await carriedSums(tenant.tenantId),
        await postingSums(tenant.tenantId),
        'the funding committed late is in the carried sums',
      );
    },
  );

  it('the schedule runs incremental proofs, full ones for a first run and once RECONCILE_FULL_INTERVAL_S has passed since the last', async () => {
    const tenant = await fundedTenant(t);
    await pay(tenant, 'V99990001', 'settled');
    const { service } = reconciliationService(t.db, clock, { intervalS: 60, fullIntervalS: 3_600 });
    const worker = new ReconciliationWorker(service, clock, 60, t.app.log);
    const scopes = async () =>
      (
        await t.db.query<{ scope: string; trigger: string }>(
          `SELECT scope, trigger FROM reconciliation_runs WHERE tenant_id = $1 AND status = 'completed' ORDER BY requested_at`,
          [tenant.tenantId],
        )
      ).rows.map((r) => `${r.trigger} ${r.scope}`);
    await worker.runOnce();
    clock.advance(61_000);
    await worker.runOnce();
    clock.advance(3_600_000);
    await worker.runOnce();
    assert.deepEqual(await scopes(), ['schedule full', 'schedule incremental', 'schedule full']);
  });
});
