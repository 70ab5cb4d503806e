// Liveness with the default delays and no fault: 2 API processes and 1 worker, a few hundred payouts
// (mostly the default outcome, which settles SANDBOX_SETTLE_DELAY_MS = 3 s after it reaches the
// rail). Every payout must be terminal within the settle delay plus 5 s of the end of the load, and
// every invariant of the chaos suite must hold.
//
// The two other liveness scenarios have files of their own (npm test runs each file under a
// 120 s timeout): liveness-postgres-restart.test.ts and liveness-two-workers.test.ts.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { ChaosClient } from '../support/chaos-client.ts';
import { ENGINE } from '../support/harness.ts';
import {
  answeredStatusesByTrigger,
  failureReport,
  finishRun,
  payoutMix,
  resolutionTimes,
  rows,
  setupTenant,
  waitFor,
  withServices,
} from '../support/process-scenario.ts';

const PAYOUTS = 200;
const CONCURRENCY = 16;
const SETTLE_DELAY_MS = 3_000; // the default of SANDBOX_SETTLE_DELAY_MS
const TERMINAL_WITHIN_MS = SETTLE_DELAY_MS + 5_000;

describe(
  'liveness: default delays, no faults',
  {
    skip:
      ENGINE !== 'postgres' ? 'needs a PostgreSQL server (DATABASE_URL): several processes share one database' : false,
  },
  () => {
    it(
      `every payout is terminal within ${TERMINAL_WITHIN_MS} ms of the end of the load`,
      { timeout: 110_000 },
      async (t) => {
        // Only what the test needs is set: every delay and interval is the default.
        await withServices(
          [{ role: 'api' }, { role: 'api' }, { role: 'worker' }],
          { DB_POOL_SIZE: '8' },
          async ({ dbname, pool, receiver, platformKey, cluster }) => {
            const customerIds = Array.from({ length: 3 }, () => randomUUID());
            const tenant = await setupTenant(cluster.baseUrl(0), platformKey, {
              funding: 1_000_000_000_000n,
              webhookUrl: receiver.url(),
              customerIds,
              limitRules: true,
            });
            const specs = payoutMix(PAYOUTS, {
              prefix: `live-${randomUUID().slice(0, 8)}`,
              customerIds,
              outcomes: [
                'plain',
                'plain',
                'V99990001',
                'plain',
                'plain',
                'V99990002',
                'plain',
                'plain',
                'V99990003',
                'plain',
                'plain',
                'V99990004',
                'plain',
                'plain',
                'V99990005',
                'plain',
                'V99990006',
                'plain',
                'V99990008',
                'plain',
                'V99990009',
                'below_floor',
              ],
            });
            const c = cluster;
            const client = new ChaosClient({
              endpoints: () => c.httpBaseUrls(),
              apiKey: tenant.apiKey,
              deadlinePerPayoutMs: 60_000,
            });

            const loadStarted = Date.now();
            await client.runAll(specs, CONCURRENCY);
            const loadEnded = Date.now();
            const answered = new Set([...client.records.values()].flatMap((r) => [...r.paymentIds]));

            const terminal = await waitFor(
              TERMINAL_WITHIN_MS,
              async () => {
                const [p] = await rows(
                  pool,
                  `SELECT count(*)::int AS total, count(*) FILTER (WHERE status NOT IN ('settled', 'failed', 'reversed'))::int AS open FROM payments WHERE tenant_id = $1`,
                  [tenant.tenantId],
                );
                return {
                  done: p.total >= answered.size && p.open === 0,
                  detail: `${p.open} of ${p.total} payments not terminal`,
                };
              },
              100,
            );
            const openAtDeadline = terminal.done
              ? []
              : await rows(
                  pool,
                  `SELECT id, status, beneficiary->>'nationalId' AS national_id, created_at, next_check_at, check_attempts FROM payments
              WHERE tenant_id = $1 AND status NOT IN ('settled', 'failed', 'reversed') ORDER BY created_at LIMIT 10`,
                  [tenant.tenantId],
                );

            const result = await finishRun({
              name: 'liveness',
              cluster,
              pool,
              tenant,
              client,
              receiver,
              settleTimeoutMs: 30_000,
              adminUrl: process.env.DATABASE_URL!,
              dbname,
            });
            if (!terminal.done) {
              result.violations.unshift(
                `not every payout was terminal ${TERMINAL_WITHIN_MS} ms after the end of the load (${terminal.detail}); the oldest open ones: ${JSON.stringify(openAtDeadline)}`,
              );
            }
            const times = await resolutionTimes(pool, tenant.tenantId);
            const summary =
              `load ${loadEnded - loadStarted} ms; all terminal ${terminal.done ? `${terminal.ms} ms after the load` : 'NOT in time'}; ` +
              `commit→terminal p50 ${times.p50} ms, p99 ${times.p99} ms, max ${times.max} ms; answered statuses ${JSON.stringify(answeredStatusesByTrigger(client))}; ${result.summary}`;
            t.diagnostic(summary);
            if (result.artifacts) t.diagnostic(`artifacts: ${result.artifacts}`);
            assert.deepEqual(
              result.violations,
              [],
              failureReport({ ...result, summary }, cluster, `slowest payments: ${JSON.stringify(times.slowest)}`),
            );
          },
        );
      },
    );
  },
);
