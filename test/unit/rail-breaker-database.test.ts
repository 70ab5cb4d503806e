// Whose failure a rail's circuit breaker counts. The sandbox's bank is tables of the service's own
// database, so a database that refuses connections (restarting, down) fails the sandbox's calls
// without the rail having failed: its breaker must stay closed, or routing skips the only test rail
// and payouts fail `instrument_unsupported` until the breaker's while is over. A bank that refuses
// connections is the rail failing: its breaker opens. Both refusals are real ones, of one closed port.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { isTransientDatabaseError } from '../../src/db/database.ts';
import { PostgresDatabase } from '../../src/db/postgres.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { HttpBankRail } from '../../src/rails/http-bank/adapter.ts';
import { isRailFailure, ServiceDatabaseError, type RailTransfer } from '../../src/rails/rail.ts';
import { SandboxRail } from '../../src/rails/sandbox-rail.ts';
import { callRail } from '../../src/rails/send.ts';
import { MoneyMetrics } from '../../src/services/money-metrics.ts';
import { RailMetrics } from '../../src/services/rail-metrics.ts';
import { RailRegistry } from '../../src/services/rail-registry.ts';
import { TEST_CALLBACK_KEY, TEST_REQUEST_KEYS } from '../support/gateway-simulator.ts';

const FAILURES_TO_OPEN = 3;
/** Calls of each kind: well past what opens a breaker. */
const CALLS = FAILURES_TO_OPEN * 3;
const RAIL_TIMEOUT_MS = 5_000;

/** A port nothing listens on: connecting to it is refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
  return port;
}

function transfer(mode: 'test' | 'live'): RailTransfer {
  return {
    reference: randomUUID(),
    tenantId: randomUUID(),
    mode,
    instrument: 'pago_movil',
    amountMinor: 150_000n,
    asset: 'BS',
    beneficiary: { fullName: 'María Pérez', nationalId: 'V20111222', bankCode: '0102', accountNumber: null, phone: '04241234567' },
    sender: { nationalId: 'V12345678', nationality: 'VE', firstName: 'Ana', lastName: 'Díaz', phone: '04141234567', email: 'ana@example.com' },
  };
}

describe("a rail's circuit breaker counts the rail's failures, not the service database's", () => {
  const clock = new ManualClock('2026-11-27T12:00:00Z');
  let db: PostgresDatabase;
  let bank: HttpBankRail;

  before(async () => {
    const port = await closedPort();
    // The service's database, down: the sandbox's bank is in it.
    db = new PostgresDatabase(`postgres://postgres@127.0.0.1:${port}/bds`, 4);
    // A bank connector whose gateway refuses connections: the rail itself is down.
    bank = new HttpBankRail(
      { name: 'bank', kind: 'http-bank', baseUrl: `http://127.0.0.1:${port}`, keys: [TEST_REQUEST_KEYS[0]!], callbackKeys: [TEST_CALLBACK_KEY], timeoutMs: RAIL_TIMEOUT_MS, modes: ['live'] },
      db,
      clock,
    );
  });

  after(async () => {
    await bank.close();
    await db.close();
  });

  /** The rails of a process, each breaker closed: the sandbox on the database that is down, and the bank. */
  function rails(): RailRegistry {
    const metrics = new Registry();
    return new RailRegistry(
      db,
      clock,
      { sandbox: new SandboxRail(db, clock, { settleDelayMs: 0, reverseDelayMs: 0 }), connectors: [bank] },
      { failuresToOpen: FAILURES_TO_OPEN, openMs: 30_000, probeTimeoutMs: RAIL_TIMEOUT_MS },
      new RailMetrics(metrics, new MoneyMetrics(metrics, db, clock), () => clock.now().toISOString()),
    );
  }

  it('sends the database refused leave the sandbox admitting payouts; sends the bank refused open its breaker', async () => {
    const registry = rails();
    const sandbox = registry.named('sandbox')!;
    for (let i = 0; i < CALLS; i += 1) {
      const outcome = await callRail(sandbox.adapter, transfer('test'), RAIL_TIMEOUT_MS);
      assert.equal(outcome.status, 'error', 'its fate is unknown, as after any error');
      assert.ok('database' in outcome && outcome.database, `a send our database failed is told apart: ${JSON.stringify(outcome)}`);
      registry.sent('sandbox', outcome);
    }
    assert.deepEqual([sandbox.breaker.state, sandbox.breaker.failures, sandbox.breaker.admits()], ['closed', 0, true]);

    const rail = registry.named('bank')!;
    for (let i = 0; i < FAILURES_TO_OPEN; i += 1) {
      const outcome = await callRail(rail.adapter, transfer('live'), RAIL_TIMEOUT_MS);
      assert.equal(outcome.status, 'not_received', JSON.stringify(outcome));
      registry.sent('bank', outcome);
    }
    assert.deepEqual([rail.breaker.state, rail.breaker.admits()], ['open', false]);
  });

  it("the reaper's questions the database failed leave the sandbox's breaker closed; those the bank failed open its breaker", async () => {
    const registry = rails();
    const sandbox = registry.named('sandbox')!;
    for (let i = 0; i < CALLS; i += 1) {
      const error = await sandbox.adapter.lookup(randomUUID(), 'test').then(
        () => assert.fail('a lookup in a database that refuses connections cannot answer'),
        (e: unknown) => e,
      );
      assert.ok(error instanceof ServiceDatabaseError, String(error));
      assert.equal(isRailFailure(error), false);
      // Still the database error it was: a request that meets it answers 503, as before.
      assert.equal(isTransientDatabaseError(error), true, `${error.message} (${error.code})`);
      registry.unanswered('sandbox', error);
    }
    assert.deepEqual([sandbox.breaker.state, sandbox.breaker.failures], ['closed', 0]);
    await assert.rejects(sandbox.adapter.lookupMany!([randomUUID()], 'test'), ServiceDatabaseError);
    await assert.rejects(sandbox.adapter.pendingNotifications(10), ServiceDatabaseError);

    const rail = registry.named('bank')!;
    for (let i = 0; i < FAILURES_TO_OPEN; i += 1) {
      const error = await rail.adapter.lookup(randomUUID(), 'live').then(
        () => assert.fail('a lookup at a gateway that refuses connections cannot answer'),
        (e: unknown) => e,
      );
      assert.equal(isRailFailure(error), true, String(error));
      registry.unanswered('bank', error);
    }
    assert.equal(rail.breaker.state, 'open');
  });
});
