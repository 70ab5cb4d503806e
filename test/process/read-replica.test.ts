// The list reads served by a real streaming replica (DATABASE_READ_URL), and their fallback to the
// primary: a private PostgreSQL cluster (its pg_hba.conf, from initdb, accepts replication connections
// from 127.0.0.1; the machine's shared server may not), a hot standby made of its base backup, and the
// service built as `npm start` runs it, pointed at both.
//
// That the replica serves the lists cannot pass by accident: its replay is paused, a payout is made,
// and the statement, its CSV export and the payout report leave that payout out, while the payout
// itself reads back at once by id (the primary's). Then the replica is let fall past
// READ_REPLICA_MAX_LAG_MS (the lists show the payout: the primary's, counted as `lag`), caught up
// again, and stopped by its pid: the lists keep answering 200 with every payout, counted as fallbacks.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import pg from 'pg';
import { generateApiKey } from '../../src/domain/api-keys.ts';
import { businessDate } from '../../src/domain/caracas-time.ts';
import { ENGINE } from '../support/harness.ts';
import { metricsHeaders, valueOf } from '../support/metrics.ts';
import { beneficiary, SENDER } from '../support/payouts.ts';
import { PrivatePostgres, privatePostgresAvailable } from '../support/private-postgres.ts';
import { call, FAST_ENV, setupTenant, type Tenant } from '../support/process-scenario.ts';
import { freePort, startService, type ServiceProcess } from '../support/process.ts';
import { StreamingReplica, streamingReplicaAvailable } from '../support/streaming-replica.ts';
import { until } from '../support/until.ts';

/** The bound of the test's service: long enough that the reads right after the pause are the replica's on a busy machine. */
const MAX_LAG_MS = 8_000;
/** Bound of each wait: the replica catching up, falling behind past the bound, the fallbacks counted. */
const WAIT_MS = 30_000;
const WAITS = { timeoutMs: WAIT_MS, intervalMs: 100 };

const skip =
  ENGINE !== 'postgres'
    ? 'PostgreSQL only (DATABASE_URL): the embedded engine has no replica'
    : (privatePostgresAvailable() ?? streamingReplicaAvailable() ?? false);

interface Lists {
  statement: string[];
  exported: string[];
  reported: number;
}

/** What the three replica-routed reads say about the tenant's payouts. */
async function lists(base: string, tenant: Tenant): Promise<Lists> {
  const page = await call(base, tenant.apiKey, 'GET', '/v1/payments?limit=100');
  assert.equal(page.status, 200, page.text);
  const csv = await call(base, tenant.apiKey, 'GET', '/v1/payments/export');
  assert.equal(csv.status, 200, csv.text);
  const today = new Date();
  const report = await call(
    base,
    tenant.apiKey,
    'GET',
    `/v1/reports/payouts?from=${businessDate(new Date(today.getTime() - 86_400_000))}&to=${businessDate(today)}`,
  );
  assert.equal(report.status, 200, report.text);
  return {
    statement: page.json.data.map((p: { id: string }) => p.id).sort(),
    exported: csv.text
      .trim()
      .split('\r\n')
      .slice(1)
      .map((line) => line.split(',')[0]!)
      .sort(),
    reported: report.json.totals.count,
  };
}

async function payout(base: string, tenant: Tenant): Promise<string> {
  const quote = await call(base, tenant.apiKey, 'POST', '/v1/quotes', { deliver: { asset: 'BS', amount: 1_000_000 } });
  assert.equal(quote.status, 201, quote.text);
  const paid = await call(
    base,
    tenant.apiKey,
    'POST',
    '/v1/payouts',
    { method: 'pago_movil', sender: SENDER, beneficiary: beneficiary(), quoteId: quote.json.id },
    { 'idempotency-key': randomUUID() },
  );
  assert.equal(paid.status, 201, paid.text);
  return paid.json.id;
}

async function metrics(base: string): Promise<string> {
  const response = await fetch(`${base}/metrics`, { headers: metricsHeaders });
  assert.equal(response.status, 200);
  return response.text();
}

const fallbacks = async (base: string, reason?: string) =>
  valueOf(await metrics(base), 'bolivar_read_replica_fallbacks_total', reason ? { reason } : {}) ?? 0;

describe('reads from a streaming replica', { skip }, () => {
  it(
    'lists are served by the replica within the bound, by the primary past it and once it is stopped',
    { timeout: 180_000 },
    async (t) => {
      const testStarted = Date.now();
      const primary = await PrivatePostgres.start();
      let replica: StreamingReplica | undefined;
      let service: ServiceProcess | undefined;
      let standby: pg.Client | undefined;
      const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-replica-svc-'));
      try {
        const url = await primary.createDatabase('bds_replica');
        replica = await StreamingReplica.of(primary);
        t.diagnostic(
          `pg_basebackup of the private cluster: ${replica.basebackup.ms} ms, ${Math.round(replica.basebackup.kilobytes / 1024)} MB copied (du -sk of the data directory)`,
        );
        standby = new pg.Client({ connectionString: replica.url('bds_replica') });
        await standby.connect();

        const platformKey = generateApiKey('platform');
        service = await startService(
          {
            ...FAST_ENV,
            DATABASE_URL: url,
            DATABASE_READ_URL: replica.url('bds_replica'),
            READ_REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
            PLATFORM_API_KEY: platformKey,
            DATA_DIR: dataDir,
            DB_POOL_SIZE: '6',
          },
          await freePort(),
        );
        const base = service.baseUrl;
        const tenant = await setupTenant(base, platformKey, { funding: 1_000_000_000_000n });
        const first = [await payout(base, tenant), await payout(base, tenant)].sort();

        // Caught up: the replica serves, and no read was sent to the primary meanwhile.
        await until(
          'the replica measured within the bound',
          async () => {
            const text = await metrics(base);
            const lag = valueOf(text, 'bolivar_read_replica_lag_seconds');
            return valueOf(text, 'bolivar_read_replica_up') === 1 && lag !== undefined && lag * 1000 < MAX_LAG_MS;
          },
          WAITS,
        );
        const caughtUp = await until(
          'the replica has both payouts',
          async () => {
            const seen = await lists(base, tenant);
            return seen.statement.length === 2 ? seen : undefined;
          },
          WAITS,
        );
        assert.deepEqual(caughtUp, { statement: first, exported: first, reported: 2 });

        // Replay paused: what the primary writes now is not on the replica.
        await standby.query('SELECT pg_wal_replay_pause()');
        await until(
          'replay paused',
          async () => (await standby!.query(`SELECT pg_get_wal_replay_pause_state() AS s`)).rows[0].s === 'paused',
          WAITS,
        );
        const before = await fallbacks(base);
        const third = await payout(base, tenant);
        const byId = await call(base, tenant.apiKey, 'GET', `/v1/payments/${third}`);
        assert.equal(byId.status, 200, `a payment reads back by id at once (the primary's): ${byId.text}`);
        const stale = await lists(base, tenant);
        const afterStale = await fallbacks(base);
        assert.equal(
          afterStale,
          before,
          `no read went to the primary while the replica was within the bound (if it did, the machine took over ${MAX_LAG_MS} ms between the pause and the reads)`,
        );
        assert.deepEqual(
          stale,
          { statement: first, exported: first, reported: 2 },
          'the lists are the paused replica’s: they lack the payout just made',
        );

        // Past the bound the primary serves them, and says so.
        const lagBefore = await fallbacks(base, 'lag');
        const all = [...first, third].sort();
        const fresh = await until(
          'the lists served by the primary past the bound',
          async () => {
            const seen = await lists(base, tenant);
            return seen.statement.length === 3 ? seen : undefined;
          },
          WAITS,
        );
        assert.deepEqual(fresh, { statement: all, exported: all, reported: 3 });
        const text = await metrics(base);
        assert.ok(
          (valueOf(text, 'bolivar_read_replica_fallbacks_total', { reason: 'lag' }) ?? 0) - lagBefore >= 3,
          `the three reads counted as lag: ${text}`,
        );
        assert.ok(valueOf(text, 'bolivar_read_replica_lag_seconds')! * 1000 > MAX_LAG_MS);

        // Replay resumed: the replica serves again (no more fallbacks across the reads).
        await standby.query('SELECT pg_wal_replay_resume()');
        await until(
          'the replica within the bound again',
          async () => {
            const lag = valueOf(await metrics(base), 'bolivar_read_replica_lag_seconds');
            return lag !== undefined && lag * 1000 < MAX_LAG_MS / 2;
          },
          WAITS,
        );
        const resumedBefore = await fallbacks(base);
        assert.deepEqual(await lists(base, tenant), { statement: all, exported: all, reported: 3 });
        assert.equal(await fallbacks(base), resumedBefore, 'served by the replica again');
        await standby.end();
        standby = undefined;

        // The replica stopped by its pid: every list still answers 200 with every payout.
        const downBefore = await fallbacks(base);
        await replica.stop();
        for (let i = 0; i < 3; i += 1)
          assert.deepEqual(
            await lists(base, tenant),
            { statement: all, exported: all, reported: 3 },
            `reads ${i} after the replica stopped`,
          );
        const downText = await metrics(base);
        const down = (reason: string) => valueOf(downText, 'bolivar_read_replica_fallbacks_total', { reason }) ?? 0;
        assert.ok((await fallbacks(base)) - downBefore >= 9, `every read of the three rounds fell back: ${downText}`);
        assert.ok(down('query_failed') + down('unreachable') >= 9, downText);
        // A write still goes to the primary, and reads back in the list.
        const fourth = await payout(base, tenant);
        assert.ok((await lists(base, tenant)).statement.includes(fourth));
        await until(
          'the replica seen down by the sampler',
          async () => valueOf(await metrics(base), 'bolivar_read_replica_up') === 0,
          WAITS,
        );
        t.diagnostic(
          `fallbacks after the stop: query_failed ${down('query_failed')}, unreachable ${down('unreachable')}; lag ${down('lag')}; the whole test ${Date.now() - testStarted} ms`,
        );
        assert.doesNotMatch(service.output(), /"level":(50|60)/, 'no error logged');
      } finally {
        await standby?.end().catch(() => undefined);
        await service?.stop();
        await replica?.remove();
        await primary.stop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );
});
