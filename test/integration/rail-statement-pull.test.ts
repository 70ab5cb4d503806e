// The bank-side check without a person: the statement of a day is pulled from the HTTP bank gateway
// (GET /statements/{day}, paged) and matched against our payments, by the worker each morning and by
// an operator on demand. A gateway that told us "rejected" while it paid is caught by its own record;
// a day the bank has not closed is retried with a backoff and given up, loudly, after a bounded number.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { businessDate, nextDate, startOfBusinessDate } from '../../src/domain/caracas-time.ts';
import { ManualClock } from '../support/clock.ts';
import { RailStatementPullService, STATEMENT_PULL_ATTEMPTS_MAX } from '../../src/services/rail-statement-pull.ts';
import { RailStatementPullWorker } from '../../src/workers/rail-statement-pull.ts';
import type { RailAdapter, RailStatementEntry } from '../../src/rails/rail.ts';
import type { ConnectorUnderTest } from '../support/connector-kit/bank-control.ts';
import { statementChecks } from '../support/connector-kit/statement.ts';
import {
  serviceWithGateway,
  simulatorBank,
  startGatewaySimulator,
  type GatewaySimulator,
} from '../support/gateway-simulator.ts';
import { client, createTenant, type TestApp } from '../support/harness.ts';
import { assertLedgerBalanced, beneficiary, idempotencyKey as newKey, payout, reaperOf } from '../support/payouts.ts';
import { until } from '../support/until.ts';

const RAIL = 'bank-sim';
const silentLog = { info() {}, warn() {} } as never;

describe('the daily bank statement pull', () => {
  let sim: GatewaySimulator;
  let t: TestApp;
  let api: ReturnType<typeof client>;
  let admin: ReturnType<typeof client>;
  let tenantId: string;
  const today = businessDate(new Date());

  before(async () => {
    sim = await startGatewaySimulator({ settleDelayMs: 50 });
    ({ t } = await serviceWithGateway(sim, { env: { SANDBOX_RAIL_TIMEOUT_MS: '1000', REAPER_INTERVAL_MS: '20' } }));
    // No callbacks: what the gateway answers to our questions is all we hear, lies included.
    await sim.control('POST', '/_control/callbacks', { url: 'http://127.0.0.1:9/unreachable' });
    const tenant = await createTenant(t, { mode: 'live' });
    ({ api, tenantId } = tenant);
    admin = client(t.app, t.platformKey);
    const funded = await admin.post(
      `/v1/admin/tenants/${tenantId}/fundings`,
      { mode: 'live', asset: 'BS', amount: 1_000_000_000 },
      { 'idempotency-key': newKey() },
    );
    assert.equal(funded.status, 201, funded.raw);
  });

  after(async () => {
    await sim?.close();
    await t?.close();
  });

  const statusOf = async (id: string) =>
    (await t.db.query<{ status: string }>(`SELECT status FROM payments WHERE id = $1`, [id])).rows[0]!.status;
  const anomaliesOf = async (kind: string) =>
    (
      await t.db.query<{ payment_id: string | null; ours: Record<string, string> }>(
        `SELECT payment_id, ours FROM anomalies WHERE kind = $1`,
        [kind],
      )
    ).rows;
  const paid = async (nationalId: string) => {
    const answer = await payout(api, { beneficiary: beneficiary(nationalId) }, 150_000);
    assert.equal(answer.status, 201, answer.raw);
    return answer.body.id as string;
  };
  const settledOrFailed = (id: string) =>
    until(`payment ${id} final`, async () => {
      await reaperOf(t).runOnce();
      const status = await statusOf(id);
      return (status === 'settled' || status === 'failed') && status;
    });

  it('a payout the gateway answered "rejected" while its record says paid: a statement_status_mismatch from the pull', async () => {
    await sim.control('POST', '/_control/tamper/nid:V33000001', {
      with: { status: 'REJECTED', errorCode: 'REJECTED_BY_BANK' },
    });
    const lied = await paid('V33000001');
    const honest = await paid('V33000002');
    assert.equal(await settledOrFailed(lied), 'failed', 'we believed the rejection: the money went back to the tenant');
    assert.equal(await settledOrFailed(honest), 'settled');
    await until('the bank paid both', async () => {
      const record = (
        await sim.control<{ data: Array<{ reference: string; status: string }> }>('GET', '/_control/transfers')
      ).data;
      return [lied, honest].every((id) => record.find((r) => r.reference === id)?.status === 'SETTLED');
    });

    const pulled = await admin.post(`/v1/admin/rails/${RAIL}/statement-pulls`, { day: today });
    assert.equal(pulled.status, 200, pulled.raw);
    assert.equal(pulled.body.state, 'done', pulled.raw);
    assert.equal(pulled.body.started, true);
    const statement = await admin.get(`/v1/admin/rails/${RAIL}/statements/${pulled.body.statementId}`);
    assert.equal(statement.status, 200, statement.raw);
    assert.equal(statement.body.lines, 2);
    assert.equal(statement.body.counts.matched, 1, statement.raw);
    assert.equal(statement.body.counts.status_mismatch, 1, statement.raw);
    const mismatch = statement.body.mismatches.data.find((m: { paymentId: string }) => m.paymentId === lied);
    assert.equal(mismatch?.result, 'status_mismatch', statement.raw);
    assert.deepEqual(
      (await anomaliesOf('statement_status_mismatch')).map((a) => a.payment_id),
      [lied],
    );
    const audited = (
      await t.db.query<{ target_id: string; after: { day: string; state: string } }>(
        `SELECT target_id, after FROM audit_log WHERE action = 'rail_statement.pull'`,
      )
    ).rows;
    assert.deepEqual(
      audited.map((row) => [row.target_id, row.after.day, row.after.state]),
      [[RAIL, today, 'done']],
      "the operator's pull is audited",
    );

    const rails = await admin.get('/v1/admin/rails');
    const bank = rails.body.data.find((rail: { name: string }) => rail.name === RAIL);
    assert.equal(bank.statementCheck.lastStatement.id, pulled.body.statementId, rails.raw);
    assert.equal(bank.statementCheck.lastStatement.mismatches, 1);
    assert.equal(bank.statementCheck.lastPull.state, 'done');
    assert.equal(
      rails.body.data.find((rail: { name: string }) => rail.name === 'sandbox').statementCheck.lastPull,
      null,
    );
    await assertLedgerBalanced(t);
  });

  it('a statement of many pages is read whole, and the same record pulled again is the statement stored before', async () => {
    for (const nid of ['V33000003', 'V33000004', 'V33000005'])
      assert.equal(await settledOrFailed(await paid(nid)), 'settled');
    await sim.control('POST', '/_control/faults', { statementPageSize: 2 });
    try {
      const first = await admin.post(`/v1/admin/rails/${RAIL}/statement-pulls`, { day: today });
      assert.equal(first.body.state, 'done', first.raw);
      const statement = await admin.get(`/v1/admin/rails/${RAIL}/statements/${first.body.statementId}`);
      assert.equal(statement.body.lines, 5, 'every page, 2 entries at a time');
      assert.equal(statement.body.counts.matched, 4, statement.raw);
      const again = await admin.post(`/v1/admin/rails/${RAIL}/statement-pulls`, { day: today });
      assert.equal(
        again.body.statementId,
        first.body.statementId,
        'nothing new in the bank record: nothing new stored',
      );
    } finally {
      await sim.control('POST', '/_control/faults', { statementPageSize: 1000 });
    }
  });

  it('a day to come is refused; a rail without a statement (the sandbox) is told to post its file', async () => {
    const future = await admin.post(`/v1/admin/rails/${RAIL}/statement-pulls`, { day: nextDate(today) });
    assert.equal(future.status, 400, future.raw);
    assert.equal(future.body.error.code, 'validation_failed');
    const sandbox = await admin.post('/v1/admin/rails/sandbox/statement-pulls', { day: today });
    assert.equal(sandbox.status, 400, sandbox.raw);
    const unknown = await admin.post('/v1/admin/rails/no-such-rail/statement-pulls', { day: today });
    assert.equal(unknown.status, 404, unknown.raw);
  });

  it(`a day the bank has not closed: retried with a backoff, then given up after ${STATEMENT_PULL_ATTEMPTS_MAX} attempts with a statement_pull_failed anomaly`, async () => {
    const day = '2026-01-15';
    await sim.control('POST', '/_control/faults', { statementNotReady: true });
    try {
      const first = await admin.post(`/v1/admin/rails/${RAIL}/statement-pulls`, { day });
      assert.equal(first.status, 200, first.raw);
      assert.equal(first.body.state, 'retrying');
      assert.match(first.body.lastError, /^not_ready/);
      assert.ok(Date.parse(first.body.nextAttemptAt) > Date.now(), 'the next attempt waits');
      assert.equal((await anomaliesOf('statement_pull_failed')).length, 0, 'one failure is not yet for a person');
      let last = first;
      for (let attempt = 2; attempt <= STATEMENT_PULL_ATTEMPTS_MAX; attempt += 1)
        last = await admin.post(`/v1/admin/rails/${RAIL}/statement-pulls`, { day });
      assert.equal(last.body.attempts, STATEMENT_PULL_ATTEMPTS_MAX);
      assert.equal(last.body.state, 'gave_up', last.raw);
      assert.equal(last.body.nextAttemptAt, null);
      const [anomaly] = await anomaliesOf('statement_pull_failed');
      assert.deepEqual({ rail: anomaly?.ours.rail, day: anomaly?.ours.day }, { rail: RAIL, day });
    } finally {
      await sim.control('POST', '/_control/faults', { statementNotReady: false });
    }
  });

  it("the worker pulls each live rail's day before from RAIL_STATEMENT_PULL_AT on, once per day", async () => {
    // Tomorrow in Caracas, so that the day before is today (the day the gateway has transfers of).
    const tomorrow = startOfBusinessDate(nextDate(today));
    const clock = new ManualClock(new Date(tomorrow.getTime() + 5 * 3_600_000 + 59 * 60_000));
    const pulls = new RailStatementPullService(t.db, clock, t.services.railRegistry, t.services.railStatements);
    const worker = new RailStatementPullWorker(pulls, clock, 6 * 60, silentLog);
    assert.deepEqual(await pulls.liveRails(), [RAIL]);
    const pullsOfToday = async () =>
      (
        await t.db.query<{ attempts: number; done_at: Date | null }>(
          `SELECT attempts, done_at FROM rail_statement_pulls WHERE rail = $1 AND value_date = $2::date`,
          [RAIL, today],
        )
      ).rows[0]!;
    const before = await pullsOfToday();
    await worker.runOnce();
    assert.equal((await pullsOfToday()).attempts, before.attempts, 'at 05:59 nothing is pulled');
    clock.advance(60_000);
    await worker.runOnce();
    const done = await pullsOfToday();
    assert.equal(done.attempts, before.attempts + 1, "an operator's pull during the day leaves the day's own pull due");
    assert.ok(done.done_at!.getTime() >= tomorrow.getTime());
    clock.advance(3_600_000);
    await worker.runOnce();
    assert.equal((await pullsOfToday()).attempts, done.attempts, 'a day done after it ended is not pulled again');
    const off = new RailStatementPullWorker(pulls, clock, null, silentLog);
    assert.equal(await off.runOnce(), false);
  });

  it("the connector kit's statement cases pass on the HTTP connector and fail an adapter that doubles lines or calls a day not closed empty", async () => {
    const adapter = t.services.connectors[0]!;
    const cut = (statement: RailAdapter['statement']): ConnectorUnderTest => ({
      adapter: {
        ...adapter,
        submit: adapter.submit.bind(adapter),
        lookup: adapter.lookup.bind(adapter),
        lookupMany: adapter.lookupMany?.bind(adapter),
        statement,
      } as RailAdapter,
      bank: simulatorBank(sim),
      mode: 'live',
      railTimeoutMs: t.config.sandboxRailTimeoutMs,
      close: async () => {},
    });
    const honest = cut(adapter.statement);
    await statementChecks.statementNamesFinalTransfers(honest);
    await statementChecks.statementNotReadyIsSaid(honest);
    const doubling = cut(async function* (day, signal) {
      for await (const entry of adapter.statement!(day, signal)) yield* [entry, entry];
    });
    await assert.rejects(statementChecks.statementNamesFinalTransfers(doubling), /once on the statement/);
    const emptyWhenNotReady = cut(async function* (day, signal): AsyncGenerator<RailStatementEntry> {
      try {
        yield* adapter.statement!(day, signal);
      } catch {
        return;
      }
    });
    await assert.rejects(statementChecks.statementNotReadyIsSaid(emptyWhenNotReady), /RailStatementNotReady/);
  });
});
