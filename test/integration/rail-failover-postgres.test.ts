// Failover under load on PostgreSQL: several app instances (each with its own pool, its own rail
// registry and breakers, as several processes) send through the same two banks while the first
// refuses connections. Each payment is sent exactly once across both rails, to the rail it records;
// once the rails settle, the reapers of every instance resolve each payment once, by asking its own
// rail; the ledger balances and each payment has one outcome event.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { Reaper } from '../../src/workers/reaper.ts';
import { FixtureRail } from '../support/fixture-rail.ts';
import { client, ENGINE, startInstances, type Client, type Instances, type TestApp } from '../support/harness.ts';
import {
  AMPLE_RAIL_TIMEOUT_MS,
  assertLedgerBalanced,
  beneficiary,
  idempotencyKey,
  quote,
  SENDER,
} from '../support/payouts.ts';

const INSTANCES = 3;
const PAYOUTS = 60;
/**
 * The refusing rail fails at once (a refused connection, not a timeout): no call here is meant to
 * time out, and a short timeout would turn a slow answer on a loaded machine into `unknown`.
 */
const RAIL_TIMEOUT_MS = AMPLE_RAIL_TIMEOUT_MS;

describe(
  'failover across rails from several instances at once',
  {
    skip:
      ENGINE !== 'postgres'
        ? 'needs a PostgreSQL server (DATABASE_URL): the embedded engine has one connection, so no race'
        : false,
  },
  () => {
    let instances: Instances;
    let apps: TestApp[];
    let admin: Client;
    const clock = new ManualClock('2026-03-02T15:00:00Z');
    // One bank each, reached by every instance: what it received is what was sent, whoever sent it.
    const alpha = new FixtureRail('alpha', ['test']);
    const beta = new FixtureRail('beta', ['test']);

    before(async () => {
      instances = await startInstances(INSTANCES, {
        clock,
        env: { SANDBOX_RAIL_TIMEOUT_MS: String(RAIL_TIMEOUT_MS), RAIL_BREAKER_FAILURES: '3' },
        deps: { connectors: [alpha, beta] },
      });
      apps = instances.apps;
      admin = client(apps[INSTANCES - 1]!.app, apps[INSTANCES - 1]!.platformKey);
    });
    after(async () => {
      assert.equal(await instances.close(), 0, 'no deadlock was ever detected on this database');
    });

    it(`${PAYOUTS} concurrent payouts while the first rail refuses: each sent once across both rails, resolved once, the ledger balanced`, async () => {
      const tenant = await admin.post('/v1/admin/tenants', { name: 'Failover' });
      const key = await admin.post(`/v1/admin/tenants/${tenant.body.id}/api-keys`, { mode: 'test' });
      const funded = await admin.post(
        `/v1/admin/tenants/${tenant.body.id}/fundings`,
        { mode: 'test', asset: 'BS', amount: PAYOUTS * 1_100_000 },
        { 'idempotency-key': `fund-${tenant.body.id}` },
      );
      assert.equal(funded.status, 201, funded.raw);
      const apis = apps.map((a) => client(a.app, key.body.key));
      const quotes = await Promise.all(Array.from({ length: PAYOUTS }, () => quote(apis[0]!, 1_000_000)));

      alpha.behaviour = 'refuse';
      const made = await Promise.all(
        quotes.map((quoteId, i) =>
          apis[i % INSTANCES]!.post(
            '/v1/payouts',
            {
              quoteId,
              method: 'pago_movil',
              beneficiary: beneficiary(`V5000${String(i).padStart(4, '0')}`),
              sender: SENDER,
            },
            { 'idempotency-key': idempotencyKey() },
          ),
        ),
      );
      alpha.behaviour = 'ok';
      const ids = made.map((response) => {
        assert.equal(response.status, 201, response.raw);
        assert.equal(response.body.status, 'submitted');
        return response.body.id as string;
      });
      const { rows } = await apps[0]!.db.query<{ id: string; rail: string }>(
        'SELECT id, rail FROM payments WHERE tenant_id = $1',
        [tenant.body.id],
      );
      const railOf = new Map(rows.map((row) => [row.id, row.rail]));
      for (const id of ids) {
        const sends = [...alpha.received, ...beta.received].filter((reference) => reference === id).length;
        assert.equal(sends, 1, `payment ${id} sent once across both rails`);
        assert.ok(
          (railOf.get(id) === 'beta' ? beta : alpha).received.includes(id),
          `payment ${id} sent to the rail it records (${railOf.get(id)})`,
        );
      }
      assert.equal(alpha.received.length, 0, 'the refusing rail received nothing');

      // The banks pay; every instance's reaper asks, each payment of its own rail.
      for (const id of ids) (alpha.transfers.has(id) ? alpha : beta).settle(id);
      clock.advance(60_000);
      const reapers = apps.map(
        (t) =>
          new Reaper(t.db, clock, t.services.railRegistry, t.services.outcomes, {
            intervalMs: 1000,
            railTimeoutMs: RAIL_TIMEOUT_MS,
            railQueueMaxAgeMs: t.config.railQueueMaxAgeS * 1000,
          }),
      );
      for (let pass = 0; pass < 3; pass += 1) await Promise.all(reapers.map((reaper) => reaper.runOnce()));
      const settled = await apps[0]!.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1 AND status = 'settled'`,
        [tenant.body.id],
      );
      assert.equal(settled.rows[0]!.n, PAYOUTS);
      assert.equal(alpha.lookups.length, 0, 'no payment on beta was asked of alpha');
      const events = await apps[0]!.db.query<{ aggregate_id: string; n: number }>(
        `SELECT aggregate_id, count(*)::int AS n FROM outbox_events WHERE tenant_id = $1 AND event_type = 'payment.settled' GROUP BY aggregate_id`,
        [tenant.body.id],
      );
      assert.equal(events.rows.length, PAYOUTS);
      assert.ok(
        events.rows.every((row) => row.n === 1),
        'one outcome event per payment',
      );
      await assertLedgerBalanced(apps[0]!);
    });
  },
);
