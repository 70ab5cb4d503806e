// Chaos: 2 API processes and 1 worker on one PostgreSQL, a few hundred payouts from retrying clients,
// and one process SIGKILLed (and restarted) every few seconds, cycling through all three. Afterwards
// nothing may be lost, doubled or unbalanced: one payment per key and per quote, every payment
// terminal with the outcome its sandbox trigger decides, a balanced ledger that agrees with the
// payments, exactly the outcome events, each published and received, one rail submission per
// payment, no deadlock and no 500.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { ChaosClient } from '../support/chaos-client.ts';
import { ENGINE } from '../support/harness.ts';
import {
  failureReport,
  FAST_ENV,
  finishRun,
  paced,
  payoutMix,
  setupTenant,
  withServices,
} from '../support/process-scenario.ts';
import { underKills } from '../support/service-cluster.ts';

// Overridable for a heavier run by hand, e.g. BDS_CHAOS_PAYOUTS=600 BDS_CHAOS_KILL_EVERY_MS=500 BDS_CHAOS_TIMEOUT_MS=400000
// node --import tsx --test --test-timeout=600000 test/process/chaos.test.ts
const knob = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const PAYOUTS = knob('BDS_CHAOS_PAYOUTS', 300);
const CONCURRENCY = knob('BDS_CHAOS_CONCURRENCY', 16);
/** Payout i starts no earlier than i × PACE_MS: the load lasts about 36 s, through half a dozen kills. */
const PACE_MS = knob('BDS_CHAOS_PACE_MS', 120);
/** The pause between a restarted process being ready and the next kill. */
const KILL_EVERY_MS = knob('BDS_CHAOS_KILL_EVERY_MS', 2_500);
/**
 * The payout path calls the rail itself only within its send window (REAPER_INTERVAL_MS, at least
 * 1 s, from its batch's start; later the reaper sends it): both paths run, so kills land in both.
 */
const REAPER_INTERVAL_MS = knob('BDS_CHAOS_REAPER_INTERVAL_MS', 1_000);
const TIMEOUT_MS = knob('BDS_CHAOS_TIMEOUT_MS', 115_000);
/** The wait for everything to resolve: up to 90 s, within what is left of the test's own timeout. */
const settleTimeout = (testStarted: number) =>
  Math.max(10_000, Math.min(90_000, TIMEOUT_MS - 20_000 - (Date.now() - testStarted)));

describe(
  'chaos: SIGKILLed service processes under payout load',
  {
    skip:
      ENGINE !== 'postgres' ? 'needs a PostgreSQL server (DATABASE_URL): several processes share one database' : false,
  },
  () => {
    it('loses, doubles and unbalances nothing', { timeout: TIMEOUT_MS }, async (t) => {
      const testStarted = Date.now();
      const nodes = [{ role: 'api' as const }, { role: 'api' as const }, { role: 'worker' as const }];
      await withServices(
        nodes,
        { DB_POOL_SIZE: '8', ...FAST_ENV, REAPER_INTERVAL_MS: String(REAPER_INTERVAL_MS) },
        async ({ dbname, pool, receiver, platformKey, cluster }) => {
          const customerIds = Array.from({ length: 4 }, () => randomUUID());
          const tenant = await setupTenant(cluster.baseUrl(0), platformKey, {
            funding: 1_000_000_000_000n,
            webhookUrl: receiver.url(),
            customerIds,
            limitRules: true,
          });
          const specs = payoutMix(PAYOUTS, {
            prefix: `chaos-${randomUUID().slice(0, 8)}`,
            customerIds,
            outcomes: [
              'V99990001',
              'plain',
              'V99990002',
              'plain',
              'V99990003',
              'below_floor',
              'V99990004',
              'plain',
              'V99990005',
              'V99990006',
              'plain',
              'V99990007',
              'V99990008',
              'plain',
              'V99990009',
              'below_floor',
              'plain',
            ],
          });
          const c = cluster;
          const client = new ChaosClient({
            endpoints: () => c.httpBaseUrls(),
            apiKey: tenant.apiKey,
            deadlinePerPayoutMs: 60_000,
          });

          const load = await underKills(
            cluster,
            { order: [0, 2, 1], everyMs: KILL_EVERY_MS, firstAfterMs: 1_500 },
            () => paced(specs, CONCURRENCY, PACE_MS, (spec) => client.payout(spec)),
          );

          const result = await finishRun({
            name: 'chaos',
            cluster,
            pool,
            tenant,
            client,
            receiver,
            settleTimeoutMs: settleTimeout(testStarted),
            adminUrl: process.env.DATABASE_URL!,
            dbname,
          });
          if (load.restartErrors.length)
            result.violations.push(`restarts that failed: ${load.restartErrors.join('\n')}`);
          const killed = new Set(cluster.exits.filter((e) => e.signal === 'SIGKILL').map((e) => e.node));
          if (killed.size < 3)
            result.violations.push(
              `the load ended before every process was killed once (killed: ${[...killed].join(', ')})`,
            );
          const summary = `load ${load.loadMs} ms, ${load.kills} kills; ${result.summary}`;
          t.diagnostic(summary);
          if (result.artifacts) t.diagnostic(`artifacts: ${result.artifacts}`);
          assert.deepEqual(result.violations, [], failureReport({ ...result, summary }, cluster));
        },
      );
    });
  },
);
