// Races that only a real server shows: several app instances, each with its own connection pool, on
// one PostgreSQL database, as several processes would be. Every test also proves the lock order by
// its absence of deadlocks (checked once every pool is closed, when PostgreSQL has flushed its counts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ManualClock } from '../support/clock.ts';
import { sendEndsMs } from '../../src/domain/send-schedule.ts';
import { Reaper } from '../../src/workers/reaper.ts';
import {
  assertEnvelope,
  client,
  ENGINE,
  startInstances,
  type Client,
  type Instances,
  type TestApp,
  type TestDatabase,
} from '../support/harness.ts';
import { assertLedgerBalanced, beneficiary, idempotencyKey, quote, SENDER } from '../support/payouts.ts';

/**
 * The bound on one rail call, the payout path's and the reapers' alike: seconds, as in production.
 * The sandbox's calls are statements on this database and take what a loaded machine gives them: at
 * 300 ms a reaper's question about the notifications once timed out, and so did the whole pass.
 */
const RAIL_TIMEOUT_MS = 5_000;
const REAPER_INTERVAL_MS = 500;
const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '1000',
  SANDBOX_REVERSE_DELAY_MS: '1000',
  SANDBOX_RAIL_TIMEOUT_MS: String(RAIL_TIMEOUT_MS),
  REAPER_INTERVAL_MS: String(REAPER_INTERVAL_MS),
};
/**
 * How long after its creation a payout the rail has not heard of may still be on its way from the
 * payout path (its send window, then the rail timeout): only after that does a reaper send it itself.
 */
const SEND_ENDS_MS = sendEndsMs({ reaperIntervalMs: REAPER_INTERVAL_MS, railTimeoutMs: RAIL_TIMEOUT_MS });
const INSTANCES = 3;

describe(
  'the money path on PostgreSQL, from several instances at once',
  {
    skip:
      ENGINE !== 'postgres'
        ? 'needs a PostgreSQL server (DATABASE_URL): the embedded engine has one connection, so no race'
        : false,
  },
  () => {
    let instances: Instances;
    let apps: TestApp[];
    let database: TestDatabase;
    let clock: ManualClock;
    let admin: Client;

    before(async () => {
      clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
      instances = await startInstances(INSTANCES, { clock, env: ENV });
      ({ apps, database } = instances);
      // The last instance started synchronised the platform key.
      admin = client(apps[INSTANCES - 1]!.app, apps[INSTANCES - 1]!.platformKey);
    });

    after(async () => {
      // Counted over the whole file: every test above ran its races on this database.
      assert.equal(await instances.close(), 0, 'no deadlock was ever detected on this database');
    });

    /** A tenant, and a client for it on each instance. */
    async function tenantOnEveryInstance(
      settings: Record<string, unknown>,
      funding = 0,
    ): Promise<{ tenantId: string; apis: Client[] }> {
      const tenant = await admin.post('/v1/admin/tenants', { name: 'Racing', ...settings });
      assert.equal(tenant.status, 201, tenant.raw);
      const key = await admin.post(`/v1/admin/tenants/${tenant.body.id}/api-keys`, { mode: 'test' });
      if (funding > 0) {
        const funded = await admin.post(
          `/v1/admin/tenants/${tenant.body.id}/fundings`,
          { mode: 'test', asset: 'BS', amount: funding },
          { 'idempotency-key': `fund-${tenant.body.id}` },
        );
        assert.equal(funded.status, 201, funded.raw);
      }
      return { tenantId: tenant.body.id, apis: apps.map((a) => client(a.app, key.body.key)) };
    }

    const pay = (
      api: Client,
      quoteId: string,
      nationalId: string,
      extra: Record<string, unknown> = {},
      key = idempotencyKey(),
    ) =>
      api.post(
        '/v1/payouts',
        { quoteId, method: 'pago_movil', beneficiary: beneficiary(nationalId), sender: SENDER, ...extra },
        { 'idempotency-key': key },
      );

    async function reapEverywhere(ms: number, passes = 3): Promise<void> {
      clock.advance(ms);
      // As the instances' own reapers would be configured: the payout path's timeout is theirs.
      const reapers = apps.map(
        (t) =>
          new Reaper(t.db, clock, t.services.rails, t.services.outcomes, {
            intervalMs: t.config.reaperIntervalMs,
            railTimeoutMs: t.config.sandboxRailTimeoutMs,
            railQueueMaxAgeMs: t.config.railQueueMaxAgeS * 1000,
          }),
      );
      for (let i = 0; i < passes; i += 1) await Promise.all(reapers.map((r) => r.runOnce()));
    }

    it('50 concurrent payouts against a balance covering 20: exactly 20, balance exactly 0', async () => {
      const { apis, tenantId } = await tenantOnEveryInstance({}, 20 * 1_010_000);
      const quotes = await Promise.all(Array.from({ length: 50 }, () => quote(apis[0]!, 1_000_000)));
      const responses = await Promise.all(
        quotes.map((q, i) => pay(apis[i % INSTANCES]!, q, `V4000${String(i).padStart(4, '0')}`)),
      );
      assert.equal(responses.filter((r) => r.status === 201).length, 20, responses.map((r) => r.status).join(','));
      for (const r of responses.filter((r) => r.status !== 201))
        assertEnvelope(assert, r, 422, 'insufficient_tenant_funds');
      assert.equal((await apis[1]!.get('/v1/treasury/position')).body.prefundingBalance, '0');
      const open = await apis[2]!.get(`/v1/quotes/${quotes[responses.findIndex((r) => r.status === 422)]}`);
      assert.equal(open.body.status, 'open', 'a refused payout consumed nothing');
      await assertLedgerBalanced(apps[0]!);
      assert.ok(tenantId);
    });

    it('the first payouts of a new credit tenant, from every instance at once, never jointly pass its limit', async () => {
      const { apis } = await tenantOnEveryInstance({ creditEnabled: true, creditLimit: 5 * 1_010_000 });
      const quotes = await Promise.all(Array.from({ length: 24 }, () => quote(apis[0]!, 1_000_000)));
      const responses = await Promise.all(
        quotes.map((q, i) => pay(apis[i % INSTANCES]!, q, `V4100${String(i).padStart(4, '0')}`)),
      );
      assert.equal(responses.filter((r) => r.status === 201).length, 5, responses.map((r) => r.status).join(','));
      const position = (await apis[0]!.get('/v1/treasury/position')).body;
      assert.deepEqual([position.creditDrawn, position.creditAvailable], ['5050000', '0']);
      await assertLedgerBalanced(apps[0]!);
    });

    it("many payouts of one customer, immediate rail failures mixed in: the customer's limit holds and usage ends exact", async () => {
      const { apis, tenantId } = await tenantOnEveryInstance({}, 100 * 1_010_000);
      const customerId = '00000000-0000-4000-8000-00000000c0de';
      const rule = await admin.post('/v1/admin/limit-rules', {
        scope: 'customer',
        tenantId,
        subjectId: customerId,
        method: '*',
        per_tx_max: 10_000_000,
        daily_max: 1_000_000_000,
        daily_count_max: 10,
      });
      assert.equal(rule.status, 201, rule.raw);
      const quotes = await Promise.all(Array.from({ length: 40 }, () => quote(apis[0]!, 1_000_000)));
      // Every third one is rejected by the rail at once (its usage given back in the same breath).
      const ids = quotes.map((_, i) => (i % 3 === 0 ? 'V99990004' : `V4200${String(i).padStart(4, '0')}`));
      const responses = await Promise.all(quotes.map((q, i) => pay(apis[i % INSTANCES]!, q, ids[i]!, { customerId })));
      for (const r of responses)
        assert.ok(r.status === 201 || (r.status === 422 && r.body.error.code === 'limit_exceeded'), r.raw);
      const live = responses.filter((r) => r.status === 201 && r.body.status !== 'failed');
      assert.ok(live.length <= 10 && live.length > 0, `${live.length} live payouts`);
      const { rows } = await apps[0]!.db.query<{ subject_kind: string; amount: bigint; count: bigint }>(
        `SELECT subject_kind, sum(amount)::bigint AS amount, sum(count)::bigint AS count FROM limit_usage
        WHERE tenant_id = $1 AND subject_kind IN ('tenant', 'customer') GROUP BY subject_kind ORDER BY subject_kind`,
        [tenantId],
      );
      for (const row of rows) {
        assert.equal(row.count, BigInt(live.length), `${row.subject_kind} counts exactly the payouts still alive`);
        assert.equal(row.amount, BigInt(live.length) * 1_000_000n);
      }
      await assertLedgerBalanced(apps[0]!);
    });

    it('one Idempotency-Key from every instance at once: one payment, one answer', async () => {
      const { apis, tenantId } = await tenantOnEveryInstance({}, 10_000_000);
      const quoteId = await quote(apis[0]!, 1_000_000);
      const key = idempotencyKey();
      const responses = await Promise.all(
        Array.from({ length: 24 }, (_, i) => pay(apis[i % INSTANCES]!, quoteId, 'V43000001', {}, key)),
      );
      const created = responses.filter((r) => r.status === 201);
      assert.ok(created.length >= 1);
      assert.equal(new Set(created.map((r) => r.body.id)).size, 1);
      for (const r of responses.filter((r) => r.status !== 201))
        assertEnvelope(assert, r, 409, 'idempotency_request_in_progress');
      const { rows } = await apps[0]!.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1`,
        [tenantId],
      );
      assert.equal(rows[0]!.n, 1);
    });

    it('bank returns heard by several reapers at once are never lost', async () => {
      const { apis, tenantId } = await tenantOnEveryInstance({}, 100_000_000);
      const made = await Promise.all(
        Array.from(
          { length: 12 },
          async (_, i) =>
            (await pay(apis[i % INSTANCES]!, await quote(apis[0]!, 1_000_000), 'V99990007')).body.id as string,
        ),
      );
      // Settlement and the return come due together, so settling and returning race between reapers.
      await reapEverywhere(2500);
      await reapEverywhere(1000);
      const { rows } = await apps[0]!.db.query<{ status: string; reversals: number; acknowledged: boolean }>(
        `SELECT p.status, (SELECT count(*)::int FROM outbox_events e WHERE e.tenant_id = p.tenant_id AND e.aggregate_id = p.id AND e.event_type = 'payment.reversed') AS reversals,
              s.reversal_acknowledged_at IS NOT NULL AS acknowledged
         FROM payments p JOIN sandbox_rail_transfers s ON s.reference = p.id WHERE p.tenant_id = $1`,
        [tenantId],
      );
      assert.equal(rows.length, made.length);
      for (const row of rows) assert.deepEqual(row, { status: 'reversed', reversals: 1, acknowledged: true });
      await assertLedgerBalanced(apps[0]!);
    });

    it('payouts, outcomes, fundings and closes of one tenant, all at once from every instance', async () => {
      const { apis, tenantId } = await tenantOnEveryInstance({ creditEnabled: true }, 0);
      const outcomes = ['V99990001', 'V99990004', 'V99990006', 'V44000001', 'V99990007', 'V99990002'];
      const work: Array<Promise<unknown>> = [];
      for (let i = 0; i < 36; i += 1)
        work.push(quote(apis[0]!, 1_000_000).then((q) => pay(apis[i % INSTANCES]!, q, outcomes[i % outcomes.length]!)));
      for (let i = 0; i < 6; i += 1)
        work.push(
          admin.post(
            `/v1/admin/tenants/${tenantId}/fundings`,
            { mode: 'test', asset: 'BS', amount: 1_000 },
            { 'idempotency-key': `mixed-${i}` },
          ),
        );
      for (let i = 0; i < 3; i += 1) work.push(admin.post(`/v1/admin/tenants/${tenantId}/close`, { mode: 'test' }));
      work.push(reapEverywhere(1500), reapEverywhere(1500));
      const settled = await Promise.allSettled(work);
      for (const s of settled) assert.equal(s.status, 'fulfilled', String((s as PromiseRejectedResult).reason));
      for (const s of settled) {
        const value = (s as PromiseFulfilledResult<{ status?: number; raw?: string } | undefined>).value;
        if (value?.status !== undefined) assert.ok(value.status < 500, value.raw);
      }
      // Past every payout's settlement and return; and past the end of any send the payout path did not
      // make (a send that failed before the rail had it), which a reaper then makes, then settled and returned.
      await reapEverywhere(SEND_ENDS_MS + 2000);
      await reapEverywhere(2000);
      await reapEverywhere(2000);
      await admin.post(`/v1/admin/tenants/${tenantId}/close`, { mode: 'test' });
      const { rows } = await apps[0]!.db.query<{ status: string }>(
        `SELECT status FROM payments WHERE tenant_id = $1 AND status IN ('submitted', 'unknown')`,
        [tenantId],
      );
      assert.deepEqual(rows, [], 'every payout resolved');
      const position = (await apis[0]!.get('/v1/treasury/position')).body;
      assert.deepEqual(
        [position.creditDrawn, position.prefundingBalance],
        ['0', '0'],
        'the last close settled everything',
      );
      await assertLedgerBalanced(apps[0]!);
    });

    it('a connection lost mid-request answers 503 (never a 500, never a crash), and the retry with the key finds what committed', async () => {
      const { apis, tenantId } = await tenantOnEveryInstance({}, 100_000_000);
      const quotes = await Promise.all(Array.from({ length: 30 }, () => quote(apis[0]!, 1_000_000)));
      const keys = quotes.map(() => idempotencyKey());
      const inFlight = quotes.map((q, i) =>
        pay(apis[i % INSTANCES]!, q, `V4500${String(i).padStart(4, '0')}`, {}, keys[i]),
      );
      const killer = new pg.Client({ connectionString: database.url });
      await killer.connect();
      await killer.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
      );
      await killer.end();
      const first = await Promise.all(inFlight);
      for (const r of first)
        assert.ok(
          r.status === 201 ||
            (r.status === 503 && r.body.error.code === 'service_unavailable' && r.headers['retry-after'] === '1'),
          r.raw,
        );
      // The same requests again: whatever committed is answered, whatever did not now runs; one payment per key.
      const again = await Promise.all(
        quotes.map((q, i) => pay(apis[(i + 1) % INSTANCES]!, q, `V4500${String(i).padStart(4, '0')}`, {}, keys[i])),
      );
      for (const [i, r] of again.entries()) {
        if (r.status === 409) assertEnvelope(assert, r, 409, 'idempotency_request_in_progress');
        else assert.equal(r.status, 201, r.raw);
        if (first[i]!.status === 201 && r.status === 201) assert.equal(r.body.id, first[i]!.body.id);
      }
      const { rows } = await apps[0]!.db.query<{ n: number; quotes: number }>(
        `SELECT count(*)::int AS n, count(DISTINCT quote_id)::int AS quotes FROM payments WHERE tenant_id = $1`,
        [tenantId],
      );
      assert.equal(rows[0]!.n, rows[0]!.quotes, 'one payment per quote');
      await assertLedgerBalanced(apps[0]!);
    });

    it('statement and lock waits are bounded on every connection of the service', async () => {
      const { rows } = await apps[1]!.db.query<{ statement_timeout: string; lock_timeout: string; idle: string }>(
        `SELECT current_setting('statement_timeout') AS statement_timeout, current_setting('lock_timeout') AS lock_timeout,
              current_setting('idle_in_transaction_session_timeout') AS idle`,
      );
      assert.deepEqual(rows[0], { statement_timeout: '15s', lock_timeout: '5s', idle: '30s' });
    });
  },
);
