// Liveness with two worker processes (and one API process): payouts to V99990007 settle, then the
// bank returns them SANDBOX_REVERSE_DELAY_MS later. Both workers' reapers claim payments and take
// the rail's reversal notifications (handed out at least once, possibly to both). Every payout must
// end `reversed` with exactly one payment.reversed event, none may stay `settled`, and every
// notification must be acknowledged; every invariant of the chaos suite holds too.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { ChaosClient } from '../support/chaos-client.ts';
import { ENGINE } from '../support/harness.ts';
import {
  failureReport,
  FAST_ENV,
  finishRun,
  payoutMix,
  resolutionTimes,
  rows,
  setupTenant,
  withServices,
} from '../support/process-scenario.ts';

const PAYOUTS = 120;
const CONCURRENCY = 16;

describe(
  'liveness: two workers resolving reversals',
  {
    skip:
      ENGINE !== 'postgres' ? 'needs a PostgreSQL server (DATABASE_URL): several processes share one database' : false,
  },
  () => {
    it(
      'every V99990007 payout ends reversed, once, and every notification is acknowledged',
      { timeout: 110_000 },
      async (t) => {
        await withServices(
          [{ role: 'api' }, { role: 'worker' }, { role: 'worker' }],
          { DB_POOL_SIZE: '8', ...FAST_ENV },
          async ({ dbname, pool, receiver, platformKey, cluster }) => {
            const customerIds = [randomUUID(), randomUUID()];
            const tenant = await setupTenant(cluster.baseUrl(0), platformKey, {
              funding: 1_000_000_000_000n,
              webhookUrl: receiver.url(),
              customerIds,
              limitRules: true,
            });
            const specs = payoutMix(PAYOUTS, {
              prefix: `rev-${randomUUID().slice(0, 8)}`,
              customerIds,
              outcomes: ['V99990007'],
            });
            const c = cluster;
            const client = new ChaosClient({
              endpoints: () => c.httpBaseUrls(),
              apiKey: tenant.apiKey,
              deadlinePerPayoutMs: 60_000,
            });
            const loadStarted = Date.now();
            await client.runAll(specs, CONCURRENCY);
            const loadMs = Date.now() - loadStarted;

            const result = await finishRun({
              name: 'two-workers',
              cluster,
              pool,
              tenant,
              client,
              receiver,
              settleTimeoutMs: 45_000,
              adminUrl: process.env.DATABASE_URL!,
              dbname,
            });

            // The scenario's own points, stated on their own even though the invariants cover them.
            const notReversed = await rows(
              pool,
              `SELECT id, status, status_reason FROM payments WHERE tenant_id = $1 AND status <> 'reversed'`,
              [tenant.tenantId],
            );
            if (notReversed.length)
              result.violations.push(`payments that did not end reversed: ${JSON.stringify(notReversed.slice(0, 20))}`);
            const reversedEvents = await rows(
              pool,
              `SELECT p.id, count(e.id)::int AS n FROM payments p
           LEFT JOIN outbox_events e ON e.tenant_id = p.tenant_id AND e.aggregate_id = p.id AND e.event_type = 'payment.reversed'
          WHERE p.tenant_id = $1 GROUP BY p.tenant_id, p.id HAVING count(e.id) <> 1`,
              [tenant.tenantId],
            );
            if (reversedEvents.length)
              result.violations.push(
                `payments without exactly one payment.reversed event: ${JSON.stringify(reversedEvents.slice(0, 20))}`,
              );
            const unacknowledged = await rows(
              pool,
              `SELECT reference, reverse_at, reversal_acknowledged_at FROM sandbox_rail_transfers WHERE tenant_id = $1 AND reversal_acknowledged_at IS NULL`,
              [tenant.tenantId],
            );
            if (unacknowledged.length)
              result.violations.push(
                `reversal notifications not acknowledged: ${JSON.stringify(unacknowledged.slice(0, 20))}`,
              );
            const [{ n: payments }] = await rows(pool, `SELECT count(*)::int AS n FROM payments WHERE tenant_id = $1`, [
              tenant.tenantId,
            ]);
            if (payments !== PAYOUTS) result.violations.push(`${payments} payments for ${PAYOUTS} payouts`);

            const times = await resolutionTimes(pool, tenant.tenantId);
            const summary = `load ${loadMs} ms; commit→reversed p50 ${times.p50} ms, max ${times.max} ms; ${result.summary}`;
            t.diagnostic(summary);
            if (result.artifacts) t.diagnostic(`artifacts: ${result.artifacts}`);
            assert.deepEqual(result.violations, [], failureReport({ ...result, summary }, cluster));
          },
        );
      },
    );
  },
);
