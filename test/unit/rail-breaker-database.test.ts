// Whose failure a rail's circuit breaker counts. The sandbox's bank is tables of the service's own
// database, so a database that refuses connections (restarting, down) fails the sandbox's calls
// without the rail having failed: its breaker must stay closed, or routing skips the only test rail
// and payouts fail `instrument_unsupported` until the breaker's while is over; so must a send that
// times out while the sandbox's statement waits on a database that does not answer. A bank that
// refuses connections is the rail failing: its breaker opens. The sandbox's simulated hang is a
// trigger for one beneficiary, never the rail down: the sandbox's breaker never opens. The refusals are real ones, of one closed port; the silent database a real silent server.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { isTransientDatabaseError, type Database } from '../../src/db/database.ts';
import { migrate } from '../../src/db/migrate.ts';
import { PostgresDatabase } from '../../src/db/postgres.ts';
import { ManualClock } from '../support/clock.ts';
import { HttpBankRail } from '../../src/rails/http-bank/adapter.ts';
import { isRailFailure, ServiceDatabaseError, type RailTransfer } from '../../src/rails/rail.ts';
import { SandboxRail } from '../../src/rails/sandbox-rail.ts';
import { callRail } from '../../src/rails/send.ts';
import { MoneyMetrics } from '../../src/services/money-metrics.ts';
import { RailMetrics } from '../../src/services/rail-metrics.ts';
import { RailRegistry } from '../../src/services/rail-registry.ts';
import { TEST_CALLBACK_KEY, TEST_REQUEST_KEYS } from '../support/gateway-simulator.ts';
import { createTestDatabase, type TestDatabase } from '../support/harness.ts';

const FAILURES_TO_OPEN = 3;
/** Calls of each kind: well past what opens a breaker. */
const CALLS = FAILURES_TO_OPEN * 3;
const RAIL_TIMEOUT_MS = 5_000;
/** The rail timeout of the sends that are meant to time out. */
const SHORT_TIMEOUT_MS = 200;

/** A port nothing listens on: connecting to it is refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
  return port;
}

/** A server that accepts connections and never says a word: a database that does not answer. */
async function silentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function transfer(mode: 'test' | 'live', nationalId = 'V20111222'): RailTransfer {
  return {
    reference: randomUUID(),
    tenantId: randomUUID(),
    mode,
    instrument: 'pago_movil',
    amountMinor: 150_000n,
    asset: 'BS',
    beneficiary: { fullName: 'María Pérez', nationalId, bankCode: '0102', accountNumber: null, phone: '04241234567' },
    sender: {
      nationalId: 'V12345678',
      nationality: 'VE',
      firstName: 'Ana',
      lastName: 'Díaz',
      phone: '04141234567',
      email: 'ana@example.com',
    },
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
      {
        name: 'bank',
        kind: 'http-bank',
        baseUrl: `http://127.0.0.1:${port}`,
        keys: [TEST_REQUEST_KEYS[0]!],
        callbackKeys: [TEST_CALLBACK_KEY],
        timeoutMs: RAIL_TIMEOUT_MS,
        modes: ['live'],
      },
      db,
      clock,
    );
  });

  after(async () => {
    await bank.close();
    await db.close();
  });

  /** The rails of a process, each breaker closed: the sandbox on `database` (by default the one that is down), and the bank. */
  function rails(database: Database = db): RailRegistry {
    const metrics = new Registry();
    return new RailRegistry(
      database,
      clock,
      {
        sandbox: new SandboxRail(database, clock, { settleDelayMs: 0, reverseDelayMs: 0, hangMs: 60_000 }),
        connectors: [bank],
      },
      // The default window, rate and waiters; a small minimum of calls so that a handful decides.
      {
        refusalsToOpen: FAILURES_TO_OPEN,
        windowMs: 30_000,
        minimumCalls: FAILURES_TO_OPEN,
        failureRatePercent: 50,
        openMs: 30_000,
        probeTimeoutMs: RAIL_TIMEOUT_MS,
        halfOpenWaitersMax: 100,
      },
      new RailMetrics(metrics, new MoneyMetrics(metrics, db, clock), () => clock.now().toISOString()),
    );
  }

  it('sends the database refused leave the sandbox admitting payouts; sends the bank refused open its breaker', async () => {
    const registry = rails();
    const sandbox = registry.named('sandbox')!;
    for (let i = 0; i < CALLS; i += 1) {
      const outcome = await callRail(sandbox.adapter, transfer('test'), RAIL_TIMEOUT_MS);
      assert.equal(outcome.status, 'error', 'its fate is unknown, as after any error');
      assert.ok(
        'database' in outcome && outcome.database,
        `a send our database failed is told apart: ${JSON.stringify(outcome)}`,
      );
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

  it("a send still waiting on a database that does not answer is no rail failure; nor is the sandbox's own hang (V99990009), one beneficiary's trigger", async () => {
    const silent = await silentServer();
    const stalled = new PostgresDatabase(`postgres://postgres@127.0.0.1:${silent.port}/bds`, 4, {
      connectTimeoutMs: 1_000,
    });
    try {
      const registry = rails(stalled);
      const sandbox = registry.named('sandbox')!;
      for (let i = 0; i < CALLS; i += 1) {
        const outcome = await callRail(sandbox.adapter, transfer('test'), SHORT_TIMEOUT_MS);
        assert.deepEqual(
          outcome,
          { status: 'timeout', database: true },
          'unknown, as after any timeout, and told apart',
        );
        registry.sent('sandbox', outcome);
      }
      assert.deepEqual([sandbox.breaker.state, sandbox.breaker.failures], ['closed', 0]);
    } finally {
      await stalled.close();
      await silent.close();
    }

    // The database answers; the sandbox records each transfer, then never answers the send.
    const working: TestDatabase = await createTestDatabase();
    try {
      await migrate(working.db);
      const registry = rails(working.db);
      const sandbox = registry.named('sandbox')!;
      for (let i = 0; i < CALLS; i += 1) {
        const outcome = await callRail(sandbox.adapter, transfer('test', 'V99990009'), SHORT_TIMEOUT_MS);
        assert.deepEqual(outcome, { status: 'timeout' });
        registry.sent('sandbox', outcome);
      }
      // The sandbox is never judged: its timeouts simulate one beneficiary's bank, not the rail down.
      assert.deepEqual([sandbox.breaker.state, sandbox.breaker.calls], ['closed', 0]);
    } finally {
      await working.drop();
    }
  });
});
