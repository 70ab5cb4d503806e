// `npm run bench`: starts the service on PostgreSQL with production settings, drives it from a
// separate load-generator process, measures the ceilings in the same run, prints a table and writes
// bench/results.json. See bench/README.md for what each figure means.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { request } from 'undici';
import type { LoadJob, LoadResult, ScenarioFigures } from './load.ts';
import { SERVICE_ENTRY, startFlags } from './start-command.ts';
import { measureStartup, type StartupFigures } from './startup.ts';
import { describeCpu, type PayrollContext } from './end-to-end.ts';
import { runPayroll, runSoak, type PayrollFigures } from './payroll.ts';
import { describePooledPayroll, runPooledPayrolls, type PooledPayrollFigures } from './payroll-pooler.ts';
import { describeComponentCpu } from './cpu.ts';
import { describePayrollBatch, runPayrollBatch, type PayrollBatchFigures } from './payroll-batch.ts';
import { describePayoutReport, runPayoutReport, type PayoutReportFigures } from './payout-report.ts';
import { describeReconciliation, runReconciliation, type ReconciliationFigures } from './reconciliation.ts';
import { describeNoisyNeighbour, runNoisyNeighbour, type NoisyNeighbourFigures } from './noisy-neighbour.ts';
import {
  appendHistory,
  compareWithPrevious,
  describeChanges,
  figuresOf,
  readHistory,
  type HistoryEntry,
} from './history.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const QUICK = process.argv.includes('--quick');
const SOAK_S = Number(process.argv.find((a) => a.startsWith('--soak='))?.slice(7) ?? 0);
const ONLY = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const runs = (name: string) => !ONLY || ONLY.includes(name);
const WARMUP_MS = QUICK ? 1000 : 3000;
const DURATION_MS = QUICK ? 4000 : 15_000;
const SOAK_WARMUP_MS = 20_000;
/** Quotes seeded per second of soak: more than the service can use, so the list never runs out. */
const SOAK_PAYOUTS_PER_S = 2500;
const STATEMENT_ROWS = QUICK ? 100_000 : 1_000_000;
/** The payout report's tenant: a year of payouts (the requirement's 1,000,000), and two neighbours of 100,000. */
const REPORT_PAYMENTS = QUICK ? 100_000 : 1_000_000;
const REPORT_NEIGHBOUR_PAYMENTS = QUICK ? 10_000 : 100_000;
const HISTORY_ROWS = QUICK ? 20_000 : 100_000;
const PAYROLL_PAYOUTS = QUICK ? 2000 : 10_000;
const PAYROLL_BATCH_ITEMS = 1000;
/**
 * Batches in flight at once (`--batch-concurrency=N`): 2 by default. One tenant's payouts are decided
 * one transaction at a time, so batches sent together share that path: 4 at once take about twice as
 * long each as 2, for the same payouts per second.
 */
const PAYROLL_BATCH_CONCURRENCY = Number(
  process.argv.find((a) => a.startsWith('--batch-concurrency='))?.slice(20) ?? 2,
);
if (!Number.isInteger(PAYROLL_BATCH_CONCURRENCY) || PAYROLL_BATCH_CONCURRENCY < 1)
  throw new Error('bench: --batch-concurrency=N takes a whole number of batches, 1 or more');
const WEBHOOK_EVENTS = QUICK ? 3000 : 20_000;
// Page latency is the figure that matters for the statement: moderate concurrency, not saturation.
const STATEMENT_CONCURRENCY = 4;
const SENDER = {
  nationalId: 'V12345678',
  firstName: 'Ana',
  lastName: 'Rojas',
  phone: '04141234567',
  email: 'ana@example.com',
};

interface Scenario extends ScenarioFigures {
  [extra: string]: unknown;
}

const log = (text: string) => process.stderr.write(`${text}\n`);

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** BENCH_PROFILE_DIR=dir: the service processes write a V8 CPU profile there when they exit. */
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;

/** The node flags `npm start` runs the service with (its bundle, SERVICE_ENTRY, is built before the run). */
const SERVICE_FLAGS = startFlags(ROOT);

/** The ceiling (b) server: Fastify and node-postgres alone, none of the service's code (bench/ceiling-server.ts). */
const CEILING_SERVER = 'bench/ceiling-server.ts';

function startProcess(args: string[], env: Record<string, string>): ChildProcess {
  const service = args[0] === SERVICE_ENTRY;
  const profile = PROFILE_DIR && service ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  // The ceiling server runs with the service's node flags (through tsx), none of its code.
  const runner = service
    ? SERVICE_FLAGS
    : args[0] === CEILING_SERVER
      ? [...SERVICE_FLAGS, '--import', 'tsx']
      : ['--import', 'tsx'];
  const child = spawn(process.execPath, [...profile, ...runner, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr!.on('data', (chunk) => process.stderr.write(`[${path.basename(args[0]!)}] ${chunk}`));
  return child;
}

async function waitReady(url: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    try {
      const response = await request(url);
      await response.body.dump();
      if (response.statusCode === 200) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} not ready`);
}

function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** A platform key of the service's format (`bsk_platform_` + 40 base62 characters): the bench's PLATFORM_API_KEY. */
function platformApiKey(): string {
  const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let out = '';
  while (out.length < 40) {
    for (const byte of randomBytes(64)) if (byte < 248 && out.length < 40) out += BASE62[byte % 62];
  }
  return `bsk_platform_${out}`;
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return Math.round(kb / 1024);
}

async function load(job: LoadJob): Promise<LoadResult> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/load.ts'], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stdin.end(JSON.stringify(job));
  await new Promise((resolve) => child.on('exit', resolve));
  return JSON.parse(out) as LoadResult;
}

async function api(
  origin: string,
  key: string,
  method: 'GET' | 'POST' | 'PUT',
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const response = await request(`${origin}${url}`, {
    method,
    headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.body.text();
  if (response.statusCode >= 300) throw new Error(`${method} ${url} → ${response.statusCode} ${text}`);
  return JSON.parse(text);
}

function scenario(result: LoadResult, ceiling: number, extra: Record<string, unknown> = {}): Scenario {
  return {
    throughput_per_s: Math.round(result.throughputPerS),
    p50_ms: Number(result.p50Ms.toFixed(2)),
    p99_ms: Number(result.p99Ms.toFixed(2)),
    errors: result.errors,
    ceiling_throughput_per_s: Math.round(ceiling),
    ratio: Number((result.throughputPerS / ceiling).toFixed(2)),
    ...(result.exhausted ? { note: 'request list exhausted before the end' } : {}),
    ...extra,
  };
}

async function seedQuotes(db: pg.Client, tenantId: string, count: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO quotes (tenant_id, mode, id, fixed, spend_asset, spend_amount, deliver_asset, deliver_amount, fee_amount, expires_at)
     SELECT $1, 'test', gen_random_uuid(), 'deliver', 'BS', 1010000, 'BS', 1000000, 10000, now() + interval '1 day'
       FROM generate_series(1, $2) RETURNING id`,
    [tenantId, count],
  );
  return rows.map((r) => r.id);
}

async function seedBeneficiaries(db: pg.Client, tenantId: string, count: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO beneficiaries (tenant_id, mode, id, full_name, national_id, bank_code, phone, asset, country, instrument)
     SELECT $1, 'test', gen_random_uuid(), 'Bench Beneficiary ' || g, 'V' || (60000000 + g), '0102', '04241234567', 'BS', 'VE', 'pago_movil'
       FROM generate_series(1, $2) g RETURNING id`,
    [tenantId, count],
  );
  return rows.map((r) => r.id);
}

/**
 * Another tenant's history, as a server that has run for a while holds: HISTORY_ROWS payments and the
 * completed Idempotency-Keys that created them (answers of a real payment's size). Seeded before
 * anything is measured, so the planner's statistics (ANALYZE in quiesce) describe tables that are not
 * empty. Measured against empty tables, every plan made at the start of a run (and kept by the
 * connection for its lifetime) is one for a table of a few rows: scans that stay while the run fills
 * the table.
 */
async function seedHistory(db: pg.Client, tenantId: string, beneficiaryIds: string[]): Promise<void> {
  await seedPayments(db, tenantId, beneficiaryIds, HISTORY_ROWS);
  await db.query(
    `INSERT INTO idempotency_keys (tenant_id, mode, key, fingerprint, status, response_status, response_body, created_at, expires_at, payment_id)
     SELECT p.tenant_id, p.mode, 'history-' || p.id, encode(sha256(p.id::text::bytea), 'hex'), 'completed', 201,
            json_build_object('id', p.id, 'status', p.status, 'beneficiary', p.beneficiary, 'padding', repeat('x', 600))::text,
            now() - interval '1 hour', now() + interval '23 hours', p.id
       FROM payments p WHERE p.tenant_id = $1`,
    [tenantId],
  );
}

/** 1,000,000 statement rows for one tenant over ~90 days, in chunks (settled, failed, submitted). */
async function seedPayments(db: pg.Client, tenantId: string, beneficiaryIds: string[], count: number): Promise<void> {
  const chunk = 100_000;
  for (let offset = 0; offset < count; offset += chunk) {
    await db.query(
      `INSERT INTO payments (tenant_id, mode, id, customer_id, beneficiary_id, status, status_reason, source_asset, source_amount,
         payout_asset, payout_amount, fee_amount, method, method_requested, compensated, bank_reference, beneficiary,
         settled_at, created_at, updated_at)
       SELECT $1, 'test', gen_random_uuid(), NULL, ($3::uuid[])[1 + (g % array_length($3::uuid[], 1))],
              s.status, CASE WHEN s.status = 'failed' THEN 'beneficiary_mismatch' END, 'BS', 1010000, 'BS', 1000000,
              CASE WHEN s.status = 'failed' THEN 0 ELSE 10000 END, 'pago_movil', 'pago_movil', s.status = 'failed',
              CASE WHEN s.status = 'settled' THEN lpad((g % 1000000000000)::text, 12, '0') END,
              '{"fullName":"Bench","nationalId":"V60000001","bankCode":"0102","accountNumber":null,"phone":"04241234567","instrument":"pago_movil"}'::jsonb,
              CASE WHEN s.status = 'settled' THEN t.created_at + interval '4 seconds' END, t.created_at, t.created_at
         FROM generate_series($2::int + 1, $2::int + $4::int) g
         CROSS JOIN LATERAL (SELECT now() - (g::double precision / $5::double precision) * interval '90 days' AS created_at) t
         CROSS JOIN LATERAL (SELECT CASE WHEN g % 20 = 0 THEN 'failed' WHEN g % 50 = 1 THEN 'submitted' ELSE 'settled' END AS status) s`,
      [tenantId, offset, beneficiaryIds, Math.min(chunk, count - offset), count],
    );
  }
  await db.query('ANALYZE payments');
}

async function seedOutbox(db: pg.Client, tenantId: string, count: number): Promise<void> {
  await db.query(
    `INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, next_attempt_at)
     SELECT $1, 'test', 'payment.settled', 'payment', gen_random_uuid(), p::jsonb, p, now()
       FROM (SELECT json_build_object('paymentId', gen_random_uuid(), 'asset', 'BS', 'amount', '1000000',
                                      'bankReference', '000000000001', 'method', 'pago_movil')::text AS p
               FROM generate_series(1, $2)) s`,
    [tenantId, count],
  );
}

/**
 * Before each measured run: fresh planner statistics for what was just seeded (as autovacuum would
 * give a long-running server) and a checkpoint, so that no scenario pays for the previous one's
 * dirty pages or has a checkpoint start in its window. CHECKPOINT needs a superuser (or
 * pg_checkpoint); without one it is skipped and the run is only noisier.
 */
async function quiesce(db: pg.Client): Promise<void> {
  await db.query('ANALYZE');
  await db.query('CHECKPOINT').catch(() => undefined);
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  const built = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('npm run build failed');
  const dbName = `bds_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: BASE_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${dbName}`);
  const dbUrl = new URL(BASE_URL);
  dbUrl.pathname = `/${dbName}`;
  const processes: ChildProcess[] = [];
  const db = new pg.Client({ connectionString: dbUrl.toString() });
  try {
    const platformKey = platformApiKey();
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const env = {
      DATABASE_URL: dbUrl.toString(),
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_RPS: '0',
      BOOTSTRAP: 'off',
      PLATFORM_API_KEY: platformKey,
      METRICS_TOKEN: randomBytes(24).toString('hex'),
      QUOTE_TTL_SECONDS: '86400',
    };
    log(`database ${dbName}; starting the service (ROLE=api) on ${origin}`);
    const service = startProcess([SERVICE_ENTRY], { ...env, ROLE: 'api' });
    processes.push(service);
    await waitReady(`${origin}/health/ready`);
    await db.connect();

    const tenant = await api(origin, platformKey, 'POST', '/v1/admin/tenants', { name: 'Bench Remesas' });
    const issued = await api(origin, platformKey, 'POST', `/v1/admin/tenants/${tenant.id}/api-keys`, { mode: 'test' });
    const key: string = issued.key;
    await api(
      origin,
      platformKey,
      'POST',
      `/v1/admin/tenants/${tenant.id}/fundings`,
      { mode: 'test', asset: 'BS', amount: 9_000_000_000_000_000 },
      { 'idempotency-key': 'bench-funding' },
    );
    const beneficiaryIds = await seedBeneficiaries(db, tenant.id, 1000);
    const historyTenant = await api(origin, platformKey, 'POST', '/v1/admin/tenants', { name: 'Bench History' });
    await seedHistory(db, historyTenant.id, await seedBeneficiaries(db, historyTenant.id, 200));
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    const scenarios: Record<string, Scenario> = {};

    // Ceiling (a): a bare Fastify route returning a constant (also the webhook receiver).
    const barePort = await freePort();
    const bare = startProcess(['bench/bare-server.ts', String(barePort)], {});
    processes.push(bare);
    const bareOrigin = `http://127.0.0.1:${barePort}`;
    await waitReady(`${bareOrigin}/constant`);
    const ceilingA = await load({
      origin: bareOrigin,
      concurrency: 64,
      warmupMs: WARMUP_MS,
      durationMs: DURATION_MS,
      cycle: true,
      expectStatus: [200],
      requests: [{ method: 'GET', path: '/constant' }],
    });
    log(`ceiling (a) bare route: ${Math.round(ceilingA.throughputPerS)}/s`);

    // Ceiling (b): the smallest payout-shaped transaction behind a server of the bench's own, sharing
    // none of the service's code (so no change to the service moves it), stopped once measured.
    const ceilingPort = await freePort();
    const ceilingServer = startProcess([CEILING_SERVER], {
      DATABASE_URL: env.DATABASE_URL,
      HOST: env.HOST,
      PORT: String(ceilingPort),
      CEILING_API_KEY: key,
    });
    processes.push(ceilingServer);
    const ceilingOrigin = `http://127.0.0.1:${ceilingPort}`;
    await waitReady(`${ceilingOrigin}/health/ready`);
    const ceilingB: Record<number, LoadResult> = {};
    for (const concurrency of [16, 64]) {
      await quiesce(db);
      ceilingB[concurrency] = await load({
        origin: ceilingOrigin,
        concurrency,
        warmupMs: WARMUP_MS,
        durationMs: DURATION_MS,
        cycle: true,
        expectStatus: [201],
        requests: [{ method: 'POST', path: '/bench/ceiling-transaction', headers, body: '{}' }],
      });
      log(`ceiling (b) c${concurrency}: ${Math.round(ceilingB[concurrency]!.throughputPerS)}/s`);
    }
    await stopProcess(ceilingServer);

    // Payout at concurrency 16 and 64: pre-created quotes and beneficiaries, default sandbox outcome.
    for (const concurrency of runs('payout') ? [16, 64] : []) {
      const quotes = await seedQuotes(db, tenant.id, QUICK ? 15_000 : 45_000);
      await quiesce(db);
      const rssBefore = rssMb(service.pid!);
      const result = await load({
        origin,
        concurrency,
        warmupMs: WARMUP_MS,
        durationMs: DURATION_MS,
        expectStatus: [201],
        requests: quotes.map((quoteId, i) => ({
          method: 'POST' as const,
          path: '/v1/payouts',
          headers: { ...headers, 'idempotency-key': `bench-c${concurrency}-${i}` },
          body: JSON.stringify({
            quoteId,
            method: 'pago_movil',
            beneficiaryId: beneficiaryIds[i % beneficiaryIds.length],
            sender: SENDER,
          }),
        })),
      });
      const rssAfter = rssMb(service.pid!);
      scenarios[`payout_c${concurrency}`] = scenario(result, ceilingB[concurrency]!.throughputPerS, {
        rss_mb_before: rssBefore,
        rss_mb_after: rssAfter,
      });
      log(
        `payout c${concurrency}: ${Math.round(result.throughputPerS)}/s p99 ${result.p99Ms.toFixed(1)} ms errors ${result.errors} ${JSON.stringify(result.statuses)}`,
      );
    }

    // The full two-call flow per payout.
    if (runs('quote_payout')) {
      await quiesce(db);
      const flow = await load({
        origin,
        concurrency: 64,
        warmupMs: WARMUP_MS,
        durationMs: DURATION_MS,
        expectStatus: [201],
        requests: [],
        flow: { apiKey: key, beneficiaryIds, sender: SENDER, deliverAmount: 1_000_000 },
      });
      scenarios.quote_payout = scenario(flow, ceilingB[64]!.throughputPerS);
      log(`quote+payout: ${Math.round(flow.throughputPerS)} flows/s p99 ${flow.p99Ms.toFixed(1)} ms`);
    }

    // Statement pages against 1,000,000 payments of one tenant.
    if (runs('statement')) {
      log(`seeding ${STATEMENT_ROWS} payments for the statement`);
      const statementTenant = await api(origin, platformKey, 'POST', '/v1/admin/tenants', { name: 'Bench Statement' });
      const statementKey = (
        await api(origin, platformKey, 'POST', `/v1/admin/tenants/${statementTenant.id}/api-keys`, { mode: 'test' })
      ).key as string;
      const statementBeneficiaries = await seedBeneficiaries(db, statementTenant.id, 200);
      await seedPayments(db, statementTenant.id, statementBeneficiaries, STATEMENT_ROWS);
      const pages: Array<{ method: 'GET'; path: string; headers: Record<string, string> }> = [];
      const sh = { 'x-api-key': statementKey };
      let cursor: string | null = null;
      for (let i = 0; i < 40; i += 1) {
        const page: { next_cursor: string | null } = await api(
          origin,
          statementKey,
          'GET',
          `/v1/payments?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
        );
        cursor = page.next_cursor;
        pages.push({ method: 'GET', path: `/v1/payments?limit=25&cursor=${cursor}`, headers: sh });
      }
      pages.push({ method: 'GET', path: '/v1/payments', headers: sh });
      pages.push({ method: 'GET', path: '/v1/payments?status=failed', headers: sh });
      pages.push({ method: 'GET', path: `/v1/payments?beneficiaryId=${statementBeneficiaries[3]}`, headers: sh });
      const today = new Date(Date.now() - 4 * 3600_000).toISOString().slice(0, 10);
      const monthAgo = new Date(Date.now() - 30 * 24 * 3600_000).toISOString().slice(0, 10);
      pages.push({ method: 'GET', path: `/v1/payments?from=${monthAgo}&to=${today}`, headers: sh });
      await quiesce(db);
      const statement = await load({
        origin,
        concurrency: STATEMENT_CONCURRENCY,
        warmupMs: WARMUP_MS,
        durationMs: DURATION_MS,
        cycle: true,
        expectStatus: [200],
        requests: pages,
      });
      scenarios.statement = scenario(statement, ceilingA.throughputPerS, { payments: STATEMENT_ROWS });
      log(
        `statement: ${Math.round(statement.throughputPerS)}/s p50 ${statement.p50Ms.toFixed(2)} ms p99 ${statement.p99Ms.toFixed(2)} ms`,
      );
    }

    // Webhooks: deliveries per second from ONE worker process to the local receiver answering 200.
    if (runs('webhooks')) {
      await api(origin, platformKey, 'PUT', `/v1/admin/tenants/${tenant.id}/webhook-endpoint`, {
        mode: 'test',
        url: `${bareOrigin}/webhook`,
      });
      // Only the seeded events are measured: events of the payouts above are set aside, and their
      // payments are parked so that the worker's reaper does not create more events meanwhile.
      await db.query(`UPDATE payments SET next_check_at = 'infinity' WHERE status IN ('submitted', 'unknown')`);
      await db.query(`UPDATE outbox_events SET status = 'published', published_at = now() WHERE status = 'pending'`);
      const { rows: before } = await db.query<{ max: string | null }>('SELECT max(id)::text AS max FROM outbox_events');
      const firstSeeded = BigInt(before[0]!.max ?? '0');
      await seedOutbox(db, tenant.id, WEBHOOK_EVENTS);
      const worker = startProcess([SERVICE_ENTRY], { ...env, ROLE: 'worker', PORT: String(await freePort()) });
      processes.push(worker);
      // Timed from the first delivery to the last (the worker's start-up is not delivery time).
      const waitStarted = performance.now();
      let published = 0;
      let firstAt: number | undefined;
      while (performance.now() - waitStarted < 120_000) {
        const { rows } = await db.query<{ n: string }>(
          `SELECT count(*) AS n FROM outbox_events WHERE id > $1 AND status = 'published'`,
          [firstSeeded.toString()],
        );
        published = Number(rows[0]!.n);
        if (published > 0 && firstAt === undefined) firstAt = performance.now();
        if (published >= WEBHOOK_EVENTS) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      const webhookSeconds = (performance.now() - (firstAt ?? waitStarted)) / 1000;
      const { rows: durations } = await db
        .query<{ p50: number; p99: number }>(
          `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50, percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99 FROM webhook_deliveries`,
        )
        .catch(() => ({ rows: [{ p50: 0, p99: 0 }] }));
      const deliveries = published / webhookSeconds;
      scenarios.webhooks = {
        throughput_per_s: Math.round(deliveries),
        p50_ms: Number(durations[0]?.p50 ?? 0),
        p99_ms: Number(durations[0]?.p99 ?? 0),
        errors: WEBHOOK_EVENTS - published,
        ceiling_throughput_per_s: Math.round(ceilingA.throughputPerS),
        ratio: Number((deliveries / ceilingA.throughputPerS).toFixed(2)),
        events: WEBHOOK_EVENTS,
      };
      log(
        `webhooks: ${Math.round(deliveries)} deliveries/s (${published}/${WEBHOOK_EVENTS} in ${webhookSeconds.toFixed(1)} s)`,
      );
      // The payroll and soak runs start workers of their own: this one would compete with them.
      await new Promise((resolve) => {
        worker.once('exit', resolve);
        worker.kill('SIGTERM');
      });
    }

    // The headline: a payroll settled and notified end to end, with every role running.
    const payrollContext: PayrollContext = {
      db,
      databaseUrl: dbUrl.toString(),
      env,
      platformKey,
      receiverOrigin: bareOrigin,
      ceilingPerS: ceilingB[64]!.throughputPerS,
      sender: SENDER,
      freePort,
      waitReady,
      load,
      api,
      log,
      rssMb,
      startService: (serviceEnv) => startProcess([SERVICE_ENTRY], serviceEnv),
      stop: stopProcess,
      seedQuotes: (tenantId, count) => seedQuotes(db, tenantId, count),
      seedBeneficiaries: (tenantId, count) => seedBeneficiaries(db, tenantId, count),
      quiesce: () => quiesce(db),
    };
    // The payout report over a year of one tenant's payouts, the service running every role.
    let payoutReport: PayoutReportFigures | undefined;
    if (runs('payout-report')) {
      payoutReport = await runPayoutReport(payrollContext, {
        adminOrigin: origin,
        payments: REPORT_PAYMENTS,
        neighbourPayments: REPORT_NEIGHBOUR_PAYMENTS,
        beneficiaries: QUICK ? 500 : 2000,
        sequentialBudgetMs: QUICK ? 4000 : 15_000,
        concurrentMs: QUICK ? 2000 : 6000,
        warmupRequests: QUICK ? 2 : 5,
        ceilingPerS: ceilingA.throughputPerS,
      });
      for (const [name, s] of Object.entries(payoutReport.series)) scenarios[name] = { ...s };
    }

    // Proofs that follow the day's work: a full run over 1,000,000 payments, an incremental one after
    // 10,000 more, and what proving every tenant every second costs a payroll.
    let reconciliation: ReconciliationFigures | undefined;
    if (runs('reconciliation')) {
      reconciliation = await runReconciliation(payrollContext, {
        payments: QUICK ? 100_000 : 1_000_000,
        newPayouts: QUICK ? 2_000 : 10_000,
        payrollPayouts: PAYROLL_PAYOUTS,
      });
    }

    const payroll: Record<string, PayrollFigures> = {};
    if (runs('payroll')) {
      for (const topology of ['all', 'api+worker'] as const)
        payroll[topology] = await runPayroll(payrollContext, topology, PAYROLL_PAYOUTS);
    }
    // The same payroll behind PgBouncer (transaction mode), beside the direct one above.
    const payrollPooler = runs('payroll-pooler')
      ? await runPooledPayrolls(payrollContext, ['all', 'api+worker'], PAYROLL_PAYOUTS, payroll)
      : undefined;
    // The same payroll as a payroll file: batches through POST /v1/payout-batches.
    const payrollBatch: Record<string, PayrollBatchFigures> = {};
    if (runs('payroll-batch')) {
      const shape = {
        payouts: PAYROLL_PAYOUTS,
        itemsPerBatch: PAYROLL_BATCH_ITEMS,
        concurrency: PAYROLL_BATCH_CONCURRENCY,
      };
      for (const topology of ['all', 'api+worker'] as const)
        payrollBatch[topology] = await runPayrollBatch(payrollContext, topology, shape);
    }

    // One tenant's payroll file beside another tenant's single payouts.
    let noisyNeighbour: NoisyNeighbourFigures | undefined;
    if (runs('noisy-neighbour')) {
      noisyNeighbour = await runNoisyNeighbour(payrollContext, {
        payouts: PAYROLL_PAYOUTS,
        itemsPerBatch: PAYROLL_BATCH_ITEMS,
        batchConcurrency: PAYROLL_BATCH_CONCURRENCY,
        windowMs: QUICK ? 6000 : 15_000,
      });
    }

    // Memory over a long run, in the payroll setup (an api process and a worker).
    const soak = SOAK_S > 0 ? await runSoak(payrollContext, SOAK_S, SOAK_WARMUP_MS, SOAK_PAYOUTS_PER_S) : undefined;

    let startup: StartupFigures | undefined;
    if (runs('startup')) {
      startup = await measureStartup({
        root: ROOT,
        databaseUrl: dbUrl.toString(),
        port: await freePort(),
        runs: QUICK ? 1 : 3,
        log,
      });
    }

    const { rows: version } = await db.query<{ v: string }>("SELECT current_setting('server_version') AS v");
    const results = {
      machine: {
        cpus: os.cpus().length,
        cpu_model: os.cpus()[0]?.model ?? 'unknown',
        memory_gib: Math.round(os.totalmem() / 2 ** 30),
        node: process.version,
        postgresql: version[0]!.v,
        quick: QUICK,
        warmup_ms: WARMUP_MS,
        duration_ms: DURATION_MS,
        ceiling_a_bare_route_per_s: Math.round(ceilingA.throughputPerS),
        ceiling_b_c16_per_s: Math.round(ceilingB[16]!.throughputPerS),
        ceiling_b_c64_per_s: Math.round(ceilingB[64]!.throughputPerS),
        statement_concurrency: STATEMENT_CONCURRENCY,
        seconds: Math.round((Date.now() - startedAt) / 1000),
      },
      scenarios,
      ...(payoutReport ? { payout_report: payoutReport } : {}),
      ...(reconciliation ? { reconciliation } : {}),
      ...(noisyNeighbour ? { noisy_neighbour: noisyNeighbour } : {}),
      ...(Object.keys(payroll).length > 0 ? { payroll } : {}),
      ...(payrollPooler === undefined
        ? {}
        : typeof payrollPooler === 'string'
          ? { payroll_pooler_skipped: payrollPooler }
          : { payroll_pooler: payrollPooler }),
      ...(Object.keys(payrollBatch).length > 0 ? { payroll_batch: payrollBatch } : {}),
      ...(soak ? { soak } : {}),
      ...(startup ? { startup } : {}),
    };
    writeFileSync(path.join(ROOT, 'bench/results.json'), JSON.stringify(results, null, 2) + '\n');
    const entry: HistoryEntry = {
      commit: commitOf(),
      at: new Date().toISOString(),
      quick: QUICK,
      figures: figuresOf(results),
    };
    const historyFile = path.join(ROOT, 'bench/history.jsonl');
    const comparison = compareWithPrevious(readHistory(historyFile), entry);
    appendHistory(historyFile, entry);
    printTable(results.scenarios);
    printPayrolls(payroll, payrollPooler, payrollBatch);
    if (payoutReport) process.stdout.write(describePayoutReport(payoutReport));
    if (reconciliation) process.stdout.write(describeReconciliation(reconciliation));
    if (noisyNeighbour) process.stdout.write(describeNoisyNeighbour(noisyNeighbour));
    if (soak) {
      process.stdout.write(
        `\nsoak (api+worker, ${soak.seconds} s): ${soak.throughput_per_s}/s, errors ${soak.errors}; RSS growth after warm-up: ` +
          Object.entries(soak.rss)
            .map(([role, r]) => `${role} ${(100 * r.growth).toFixed(1)} % (${r.mb_before} → ${r.mb_after} MB)`)
            .join(', ') +
          '\n',
      );
    }
    if (startup) {
      process.stdout.write(
        `\nstartup (first answer): PostgreSQL restart ${startup.postgres_restart_ms} ms (target ≤ ${startup.targets.postgres_restart_ms}; npm start ${startup.postgres_restart_npm_start_ms} ms), ` +
          `embedded first start ${startup.pglite_first_start_ms} ms (target ≤ ${startup.targets.pglite_first_start_ms}), embedded restart ${startup.pglite_restart_ms} ms\n`,
      );
    }
    process.stdout.write(describeChanges(comparison, entry.commit));
    process.stdout.write(
      `\nwritten bench/results.json and a line of bench/history.jsonl (${results.machine.seconds} s)\n`,
    );
  } finally {
    for (const child of processes) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1500));
    await db.end().catch(() => undefined);
    if (!process.env.BENCH_KEEP_DB)
      await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

/** The commit measured: HEAD, with `+dirty` when the working tree has changes (they are part of what ran). */
function commitOf(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty =
      execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8' }).trim() !==
      '';
    return dirty ? `${head}+dirty` : head;
  } catch {
    return 'unknown';
  }
}

/** Per topology, the payroll paid one request per payout, the same behind PgBouncer, and the same in batches. */
function printPayrolls(
  payroll: Record<string, PayrollFigures>,
  pooler: Record<string, PooledPayrollFigures> | string | undefined,
  payrollBatch: Record<string, PayrollBatchFigures>,
): void {
  for (const topology of ['all', 'api+worker'] as const) {
    const p = payroll[topology];
    if (p) {
      process.stdout.write(
        `\npayroll (${p.topology}, ${p.payouts} payouts, c64): submit ${p.submit_throughput_per_s}/s (ratio ${p.submit_ratio}, p50 ${p.submit_p50_ms} ms, p99 ${p.submit_p99_ms} ms, errors ${p.errors}); ` +
          `all settled ${p.seconds_to_all_settled} s; last webhook ${p.seconds_to_last_webhook} s → ${p.end_to_end_per_s}/s end to end (ratio ${p.end_to_end_ratio}); ` +
          `CPU per payout: ${describeCpu(p)}` +
          (p.cpu_by_component ? `; ${describeComponentCpu(p.cpu_by_component)}` : ''),
      );
    }
    const pooled = typeof pooler === 'object' ? pooler[topology] : undefined;
    if (pooled) process.stdout.write(`\n${describePooledPayroll(pooled)}`);
    const b = payrollBatch[topology];
    if (b) process.stdout.write(`\n${describePayrollBatch(b)}`);
  }
  if (typeof pooler === 'string') process.stdout.write(`\npayroll-pooler: ${pooler}`);
  if (Object.keys(payroll).length + Object.keys(payrollBatch).length > 0 || pooler !== undefined)
    process.stdout.write('\n');
}

function printTable(scenarios: Record<string, Scenario>): void {
  const rows = [['scenario', 'throughput/s', 'p50 ms', 'p99 ms', 'errors', 'ceiling/s', 'ratio']];
  for (const [name, s] of Object.entries(scenarios)) {
    rows.push([
      name,
      String(s.throughput_per_s),
      s.p50_ms.toFixed(2),
      s.p99_ms.toFixed(2),
      String(s.errors),
      String(s.ceiling_throughput_per_s),
      s.ratio.toFixed(2),
    ]);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const row of rows)
    process.stdout.write(
      row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ') + '\n',
    );
}

await main();
