// Behind PgBouncer in transaction pooling mode (DATABASE_POOLER=transaction): 6 API and 2 worker
// processes, each with a pool of DB_POOL_SIZE=24 (+8 relaxed) connections to the pooler — up to 256
// client connections, far more than the server's own max_connections of 100 — share the pooler's 20 server
// connections. A few thousand payouts of every sandbox outcome from retrying clients, with processes
// SIGKILLed and restarted mid-run. Afterwards every invariant of the chaos test holds, and PostgreSQL
// never saw more sessions on the database than the pooler's 20 plus the direct ones named below.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import pg from 'pg';
import { ChaosClient } from '../support/chaos-client.ts';
import { createTestDatabase, ENGINE } from '../support/harness.ts';
import { pgbouncerBinary, startPgBouncer, type PgBouncer } from '../support/pgbouncer.ts';
import {
  ASSERTIONS_APP,
  deadlocksOf,
  failureReport,
  FAST_ENV,
  finishRun,
  paced,
  payoutMix,
  setupTenant,
  withServices,
} from '../support/process-scenario.ts';
import { underKills } from '../support/service-cluster.ts';

const knob = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
/** Sized for under 90 s on the shared 2-core test machine: 47 to 64 s in three runs at load averages up to 14. */
const PAYOUTS = knob('BDS_POOLER_PAYOUTS', 2000);
const CONCURRENCY = knob('BDS_POOLER_CONCURRENCY', 48);
/** Payout i starts no earlier than i × PACE_MS: the load lasts about 30 s, through several kills. */
const PACE_MS = knob('BDS_POOLER_PACE_MS', 15);
const KILL_EVERY_MS = knob('BDS_POOLER_KILL_EVERY_MS', 2_500);
const TIMEOUT_MS = knob('BDS_POOLER_TIMEOUT_MS', 170_000);
/** PgBouncer's default_pool_size: its server connections to the one database and user. */
const POOLER_SIZE = 20;
/** Each service process's DB_POOL_SIZE: larger than the pooler's, so only the pooler bounds PostgreSQL. */
const SERVICE_POOL_SIZE = 24;
const API_PROCESSES = 6;
const WORKER_PROCESSES = 2;
/** The application_name of the services' direct connections (DATABASE_DIRECT_URL: migrations at start). */
const DIRECT_APP = 'bds-direct';
/** The test's own assertion pool (process-scenario's openPool, max 4), direct to PostgreSQL. */
const ASSERTION_CONNECTIONS = 4;
/** The wait for everything to resolve, within what is left of the test's own timeout. */
const settleTimeout = (testStarted: number) =>
  Math.max(10_000, Math.min(60_000, TIMEOUT_MS - 25_000 - (Date.now() - testStarted)));

const skip =
  ENGINE !== 'postgres'
    ? 'needs a PostgreSQL server (DATABASE_URL): PgBouncer pools its connections'
    : pgbouncerBinary() === undefined
      ? 'pgbouncer is not installed (apt-get install pgbouncer; .ci/run installs it)'
      : false;

interface Peak {
  samples: number;
  /**
   * Sessions on the database not opened directly (the test's, the services' migrations): the pooler's,
   * counting a sample over the pool only when its sessions are still there at a second look: a backend
   * whose pooler connection was just closed (a server connection dropped after a killed client, then
   * replaced) lingers in pg_stat_activity for the moments its exit takes.
   */
  pooled: number;
  /** Samples over the pool whose surplus was gone at the second look: backends that were exiting. */
  exiting: number;
  /** Every session on the database but the sampler's own. */
  total: number;
  /** PgBouncer's clients at once (SHOW POOLS: cl_active + cl_waiting). */
  clients: number;
}

/** How long an exiting backend is given to leave pg_stat_activity before a surplus counts. */
const SECOND_LOOK_MS = 250;

/** Counts the database's sessions every `intervalMs` over a direct connection, until stopped. */
async function sampleSessions(
  directUrl: string,
  bouncer: PgBouncer,
  dbname: string,
  intervalMs = 100,
): Promise<{ stop(): Promise<Peak> }> {
  const direct = new pg.Client({ connectionString: directUrl, application_name: ASSERTIONS_APP });
  const admin = new pg.Client({ connectionString: bouncer.url.replace(/\/[^/]+$/, '/pgbouncer') });
  await direct.connect();
  await admin.connect();
  const peak: Peak = { samples: 0, pooled: 0, exiting: 0, total: 0, clients: 0 };
  let stopped = false;
  let failure: unknown;
  const loop = (async () => {
    while (!stopped) {
      const r = await direct.query<{ pooled: number[]; total: number }>(
        `SELECT coalesce(array_agg(pid) FILTER (WHERE application_name NOT IN ($2, $3)), '{}') AS pooled, count(*)::int AS total
           FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND pid <> pg_backend_pid()`,
        [dbname, DIRECT_APP, ASSERTIONS_APP],
      );
      let pooled = r.rows[0]!.pooled.length;
      if (pooled > POOLER_SIZE) {
        await new Promise((resolve) => setTimeout(resolve, SECOND_LOOK_MS));
        const still = await direct.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1::int[])',
          [r.rows[0]!.pooled],
        );
        if (still.rows[0]!.n <= POOLER_SIZE) {
          peak.exiting += 1;
          pooled = still.rows[0]!.n;
        }
      }
      const pools = await admin.query('SHOW POOLS');
      const clients = pools.rows
        .filter((p) => p.database === dbname)
        .reduce((n, p) => n + Number(p.cl_active) + Number(p.cl_waiting), 0);
      peak.samples += 1;
      peak.pooled = Math.max(peak.pooled, pooled);
      peak.total = Math.max(peak.total, r.rows[0]!.total);
      peak.clients = Math.max(peak.clients, clients);
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })().catch((error: unknown) => {
    failure = error;
  });
  return {
    async stop() {
      stopped = true;
      await loop;
      await direct.end().catch(() => undefined);
      await admin.end().catch(() => undefined);
      if (failure) throw new Error(`sampling pg_stat_activity failed: ${(failure as Error).message}`);
      return peak;
    },
  };
}

describe('behind PgBouncer in transaction pooling mode', { skip }, () => {
  it(
    "loses, doubles and unbalances nothing, and PostgreSQL sees only the pooler's connections",
    { timeout: TIMEOUT_MS },
    async (t) => {
      const testStarted = Date.now();
      const database = await createTestDatabase();
      const dbname = new URL(database.url!).pathname.slice(1);
      const bouncer = await startPgBouncer(process.env.DATABASE_URL!, dbname, { poolSize: POOLER_SIZE });
      const directUrl = new URL(database.url!);
      directUrl.searchParams.set('application_name', DIRECT_APP);
      const nodes = [
        ...Array.from({ length: API_PROCESSES }, () => ({ role: 'api' as const })),
        ...Array.from({ length: WORKER_PROCESSES }, () => ({ role: 'worker' as const })),
      ];
      const sampler = await sampleSessions(database.url!, bouncer, dbname);
      let peak: Peak | undefined;
      let samplingError = '';
      const env = {
        ...FAST_ENV,
        DATABASE_URL: bouncer.url,
        DATABASE_DIRECT_URL: directUrl.toString(),
        DATABASE_POOLER: 'transaction',
        DB_POOL_SIZE: String(SERVICE_POOL_SIZE),
        REAPER_INTERVAL_MS: '1000',
      };
      const owned = {
        url: database.url!,
        async drop() {
          await sampler.stop().catch(() => undefined);
          await bouncer.stop();
          await database.drop();
        },
      };
      await withServices(
        nodes,
        env,
        async ({ pool, receiver, platformKey, cluster }) => {
          const customerIds = Array.from({ length: 4 }, () => randomUUID());
          const tenant = await setupTenant(cluster.baseUrl(0), platformKey, {
            funding: 1_000_000_000_000n,
            webhookUrl: receiver.url(),
            customerIds,
            limitRules: true,
          });
          const specs = payoutMix(PAYOUTS, {
            prefix: `pooler-${randomUUID().slice(0, 8)}`,
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
          const client = new ChaosClient({
            endpoints: () => cluster.httpBaseUrls(),
            apiKey: tenant.apiKey,
            deadlinePerPayoutMs: 60_000,
          });
          // Two API processes and both workers, each SIGKILLed and restarted once or more during the load.
          const load = await underKills(
            cluster,
            { order: [0, API_PROCESSES, 1, API_PROCESSES + 1], everyMs: KILL_EVERY_MS, firstAfterMs: 2_000 },
            () => paced(specs, CONCURRENCY, PACE_MS, (spec) => client.payout(spec)),
          );
          const result = await finishRun({
            name: 'pgbouncer',
            cluster,
            pool,
            tenant,
            client,
            receiver,
            settleTimeoutMs: settleTimeout(testStarted),
            adminUrl: process.env.DATABASE_URL!,
            dbname,
            // The pooler keeps its server connections after the services exit: stop it (and the sampler)
            // first, so that the deadlock count is read once every session has flushed its statistics.
            deadlocks: async () => {
              peak = await sampler.stop().catch((error: Error) => ((samplingError = error.message), undefined));
              await bouncer.stop();
              const d = await deadlocksOf(process.env.DATABASE_URL!, dbname);
              return {
                count: d.deadlocks,
                detail: `pg_stat_database.deadlocks = ${d.deadlocks} (sessions still connected when read: ${d.others})`,
              };
            },
          });
          if (load.restartErrors.length)
            result.violations.push(`restarts that failed: ${load.restartErrors.join('\n')}`);
          const killed = new Set(cluster.exits.filter((e) => e.signal === 'SIGKILL').map((e) => e.node));
          if (killed.size < 4)
            result.violations.push(
              `the load ended before both workers and two API processes were killed (killed: ${[...killed].join(', ')})`,
            );
          const answered = new Set([...client.records.values()].flatMap((r) => [...r.paymentIds])).size;
          if (answered < PAYOUTS * 0.9) result.violations.push(`only ${answered} of ${PAYOUTS} payouts were created`);
          // The pooler's sessions never exceed its pool; all of them, with the test's assertion pool and one
          // migration connection per service process at its start (direct, DATABASE_DIRECT_URL), stay within
          // POOLER_SIZE + ASSERTION_CONNECTIONS + the number of processes, however many clients the pooler serves.
          const bound = POOLER_SIZE + ASSERTION_CONNECTIONS + nodes.length;
          if (!peak || peak.samples === 0)
            result.violations.push(`no sample of pg_stat_activity was taken ${samplingError}`);
          else {
            if (peak.pooled > POOLER_SIZE)
              result.violations.push(
                `PostgreSQL saw ${peak.pooled} sessions from the pooler, more than its pool of ${POOLER_SIZE}`,
              );
            if (peak.total > bound)
              result.violations.push(`PostgreSQL saw ${peak.total} sessions on the database, more than ${bound}`);
          }
          const summary = `${PAYOUTS} payouts (${answered} created), load ${load.loadMs} ms, ${load.kills} kills, test ${Date.now() - testStarted} ms; sessions on the database at most ${peak?.total} (${peak?.pooled} through the pooler, ${peak?.samples} samples, ${peak?.exiting} over the pool only while a backend exited), pooler clients at most ${peak?.clients}; ${result.summary}`;
          t.diagnostic(summary);
          if (result.artifacts) t.diagnostic(`artifacts: ${result.artifacts}`);
          assert.deepEqual(
            result.violations,
            [],
            failureReport({ ...result, summary }, cluster, `--- pgbouncer log ---\n${bouncer.log()}`),
          );
        },
        owned,
      );
    },
  );
});
