// Liveness across PostgreSQL restarts and SIGKILLs: 2 API processes and 1 worker on a private PostgreSQL cluster
// (its own data directory and port, so restarting it disturbs no other test file), restarted twice
// in the middle of a payout load: once cleanly (pg_ctl stop -m fast: every session is terminated)
// and once as a crash (-m immediate: recovery from the WAL; commits made with synchronous_commit=off
// may be lost, which the service says it recovers from by design), while one service process is
// SIGKILLed and restarted every few seconds. Every service process must be up at the end, clients may see 503s and connection errors that they retry but never a 500, and afterwards
// everything resolves and every invariant of the chaos suite holds.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ChaosClient } from '../support/chaos-client.ts';
import { ENGINE } from '../support/harness.ts';
import { PrivatePostgres, privatePostgresAvailable, type StopMode } from '../support/private-postgres.ts';
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

const PAYOUTS = 160;
const CONCURRENCY = 16;
const PACE_MS = 80;
/** The pause between a killed process being ready again and the next kill. */
const KILL_EVERY_MS = 3_000;
/** When each restart begins (ms after the load started), how it stops the server, and how long it stays down. */
const RESTARTS: Array<{ atMs: number; mode: StopMode; downMs: number }> = [
  { atMs: 3_000, mode: 'fast', downMs: 1_500 },
  { atMs: 8_000, mode: 'immediate', downMs: 1_000 },
];

const skip =
  ENGINE !== 'postgres'
    ? 'needs a PostgreSQL server (DATABASE_URL): several processes share one database'
    : (privatePostgresAvailable() ?? false);

describe('liveness: PostgreSQL restarts in the middle of the load', { skip }, () => {
  it('no process exits, no 500, and everything resolves afterwards', { timeout: 110_000 }, async (t) => {
    const server = await PrivatePostgres.start();
    const url = await server.createDatabase('bds_restart').catch(async (error) => {
      await server.stop();
      throw error;
    });
    const database = { url, drop: () => server.stop() };
    const nodes = [{ role: 'api' as const }, { role: 'api' as const }, { role: 'worker' as const }];
    await withServices(
      nodes,
      { DB_POOL_SIZE: '8', ...FAST_ENV, REAPER_INTERVAL_MS: '1000' },
      async ({ dbname, pool, receiver, platformKey, cluster }) => {
        const customerIds = Array.from({ length: 3 }, () => randomUUID());
        const tenant = await setupTenant(cluster.baseUrl(0), platformKey, {
          funding: 1_000_000_000_000n,
          webhookUrl: receiver.url(),
          customerIds,
          limitRules: true,
        });
        const specs = payoutMix(PAYOUTS, {
          prefix: `pgr-${randomUUID().slice(0, 8)}`,
          customerIds,
          outcomes: [
            'plain',
            'V99990001',
            'plain',
            'V99990002',
            'V99990003',
            'plain',
            'V99990004',
            'below_floor',
            'V99990006',
            'plain',
            'V99990007',
            'V99990008',
            'V99990009',
            'plain',
            'V99990005',
          ],
        });
        const c = cluster;
        const client = new ChaosClient({
          endpoints: () => c.httpBaseUrls(),
          apiKey: tenant.apiKey,
          deadlinePerPayoutMs: 60_000,
        });

        const loadStarted = Date.now();
        const restarts: string[] = [];
        const faults = (async () => {
          for (const r of RESTARTS) {
            const wait = loadStarted + r.atMs - Date.now();
            if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
            const begun = Date.now() - loadStarted;
            const { downMs } = await server.restart({ mode: r.mode, downMs: r.downMs });
            restarts.push(`${r.mode} restart at +${begun} ms, accepting connections again ${downMs} ms later`);
          }
        })();
        // SIGKILLs too, cycling through the three processes, with the default rail breaker: the sandbox's
        // calls failing in a database that is restarting never fail a payout for another reason.
        const load = await underKills(cluster, { order: [0, 2, 1], everyMs: KILL_EVERY_MS, firstAfterMs: 1_500 }, () =>
          paced(specs, CONCURRENCY, PACE_MS, (spec) => client.payout(spec)),
        );
        await faults;
        const loadMs = Date.now() - loadStarted;
        const alive = [0, 1, 2].map((i) => cluster!.alive(i));

        const result = await finishRun({
          name: 'postgres-restart',
          cluster,
          pool,
          tenant,
          client,
          receiver,
          settleTimeoutMs: 45_000,
          adminUrl: server.url('postgres'),
          dbname,
          // pg_stat_database is reset by the crash recovery of the immediate restart: the server log
          // has every deadlock of the whole run.
          deadlocks: async () => {
            const lines = readFileSync(server.logFile, 'utf8')
              .split('\n')
              .filter((l) => l.includes('deadlock detected'));
            return {
              count: lines.length,
              detail: `${lines.length} "deadlock detected" in the server log${lines.length ? `: ${lines.slice(0, 5).join(' | ')}` : ''}`,
            };
          },
        });
        if (result.artifacts) writeFileSync(path.join(result.artifacts, 'postgres.log'), server.log());
        if (!alive.every(Boolean))
          result.violations.push(`processes down at the end of the load: ${JSON.stringify(alive)}`);
        if (restarts.length !== RESTARTS.length) result.violations.push(`only ${restarts.length} restarts happened`);
        if (load.restartErrors.length)
          result.violations.push(`process restarts that failed: ${load.restartErrors.join('\n')}`);
        if (load.kills < 2) result.violations.push(`only ${load.kills} SIGKILLs landed during the load`);
        const summary = `load ${loadMs} ms; ${load.kills} kills; ${restarts.join('; ')}; ${result.summary}`;
        t.diagnostic(summary);
        if (result.artifacts) t.diagnostic(`artifacts: ${result.artifacts}`);
        assert.deepEqual(
          result.violations,
          [],
          failureReport(
            { ...result, summary },
            cluster,
            `--- private PostgreSQL log (tail) ---\n${server.logTail(40)}`,
          ),
        );
      },
      database,
    );
  });
});
