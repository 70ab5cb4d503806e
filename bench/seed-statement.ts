// Seeds one tenant with a million payments in PostgreSQL and measures the statement through HTTP.
//
//   createdb …/bds_statement_bench
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/bds_statement_bench \
//     node --import tsx bench/seed-statement.ts [--rows 1000000] [--days 90] [--reads 1000] [--export-days 30]
//
// Migrates the database, creates a tenant and a key through the admin API, inserts the payments with
// INSERT … SELECT generate_series (chunks of 100,000, in SQL: nothing goes through Node), plus noise in
// another tenant and in live mode, then VACUUM ANALYZE. It then serves the app on a loopback port
// and reads the statement sequentially with undici (one keep-alive connection): warm-up reads, then
// `--reads` measured page reads from a fixed mix of first pages, deep cursors and every filter,
// printing p50/p99/max overall and per kind of read. Last, one CSV export of `--export-days` days,
// with its rate and the process's peak RSS. Run again on the same database, it skips the seeding and
// measures again. Run it on a database of its own and drop it afterwards.
import { createHash } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { migrate } from '../src/db/migrate.ts';
import { PostgresDatabase } from '../src/db/postgres.ts';
import { generateApiKey } from '../src/domain/api-keys.ts';
import { businessDate } from '../src/domain/caracas-time.ts';
import { encodeCursor } from '../src/domain/page-cursor.ts';
import { syncPlatformKey } from '../src/services/bootstrap.ts';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    days: { type: 'string', default: '90' },
    reads: { type: 'string', default: '1000' },
    'warmup-reads': { type: 'string', default: '300' },
    'export-days': { type: 'string', default: '30' },
  },
});
const ROWS = Number(args.rows);
const DAYS = Number(args.days);
const READS = Number(args.reads);
const WARMUP_READS = Number(args['warmup-reads']);
const EXPORT_DAYS = Number(args['export-days']);
const CHUNK_ROWS = 100_000;
const BENEFICIARIES = 50_000;
const CUSTOMERS = 5_000;

const url = process.env.DATABASE_URL;
if (!url?.startsWith('postgres')) {
  process.stderr.write(
    'Set DATABASE_URL to a PostgreSQL database of its own (it is filled with a million payments).\n',
  );
  process.exit(2);
}

const md5Uuid = (text: string) => {
  const hex = createHash('md5').update(text).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};

// One chunk of payments: created uniformly over `days` up to $t0 (microsecond instants), 80 % with a
// customer (5,000 of them), 50,000 beneficiaries; recent ones still submitted/unknown, older ones
// 86 % settled, 10 % failed, 2 % reversed, 2 % stuck. Settlement lag: 95 % within 5 minutes, 4 %
// within an hour, 1 % up to three days (late resolutions), so settlement days straddle midnight.
const CHUNK_SQL = `
INSERT INTO payments (tenant_id, mode, id, customer_id, beneficiary_id, quote_id, status, status_reason, source_asset,
  source_amount, payout_asset, payout_amount, fee_amount, method, method_requested, compensated, bank_reference,
  beneficiary, rail, settled_at, created_at, updated_at)
SELECT $1::uuid, $2, gen_random_uuid(),
  CASE WHEN r.c < 0.8 THEN md5('customer-' || (r.k % ${CUSTOMERS}))::uuid END,
  md5('beneficiary-' || (r.k % ${BENEFICIARIES}))::uuid,
  gen_random_uuid(), s.status,
  CASE s.status WHEN 'failed' THEN 'rail_rejected' WHEN 'reversed' THEN 'returned_by_bank' END,
  'BS', r.amount + r.amount / 100, 'BS', r.amount, CASE WHEN s.status = 'failed' THEN 0 ELSE r.amount / 100 END,
  r.method, r.method, s.status = 'failed',
  CASE WHEN s.status IN ('settled', 'reversed') THEN lpad(r.k::text, 12, '0') END,
  jsonb_build_object('fullName', 'Beneficiario ' || (r.k % ${BENEFICIARIES}), 'nationalId', 'V' || (10000000 + r.k % ${BENEFICIARIES}),
    'bankCode', '0102', 'accountNumber', NULL, 'phone', '04141234567', 'instrument', r.method),
  'sandbox',
  CASE WHEN s.status IN ('settled', 'reversed') THEN r.created_at + r.lag END,
  r.created_at,
  coalesce(CASE WHEN s.status IN ('settled', 'reversed') THEN r.created_at + r.lag END, r.created_at)
FROM (
  SELECT n,
    (n * 2654435761) % 1000003 AS k,
    $3::timestamptz - $6::integer * interval '1 day' + ((n + random()) * $6::integer * 86400.0 / $7::integer) * interval '1 second' AS created_at,
    random() AS c, random() AS st,
    CASE WHEN random() < 0.7 THEN 'pago_movil' ELSE 'transferencia' END AS method,
    (100000 + floor(random() * 9900000))::bigint AS amount,
    CASE WHEN random() < 0.95 THEN (2 + random() * 298) * interval '1 second'
         WHEN random() < 0.8 THEN (300 + random() * 3300) * interval '1 second'
         ELSE (3600 + random() * 68 * 3600) * interval '1 second' END AS lag
  FROM generate_series($4::integer, $5::integer - 1) AS n
) r
CROSS JOIN LATERAL (SELECT CASE
    WHEN r.created_at > $3::timestamptz - interval '15 minutes'
      THEN CASE WHEN r.st < 0.8 THEN 'submitted' WHEN r.st < 0.9 THEN 'unknown' ELSE 'settled' END
    WHEN r.st < 0.86 THEN 'settled' WHEN r.st < 0.96 THEN 'failed' WHEN r.st < 0.98 THEN 'reversed'
    WHEN r.st < 0.99 THEN 'unknown' ELSE 'submitted' END AS status) s`;

async function seed(
  db: PostgresDatabase,
  tenantId: string,
  mode: string,
  rows: number,
  t0: Date,
  seedValue: number,
): Promise<void> {
  for (let lo = 0; lo < rows; lo += CHUNK_ROWS) {
    const hi = Math.min(rows, lo + CHUNK_ROWS);
    await db.transaction(async (tx) => {
      await tx.query('SELECT setseed($1)', [((seedValue + lo / CHUNK_ROWS) % 100) / 100]);
      await tx.query(CHUNK_SQL, [tenantId, mode, t0, lo, hi, DAYS, rows]);
    });
    process.stdout.write(`  ${mode} ${tenantId.slice(0, 8)}: ${hi.toLocaleString('en')} payments\r`);
  }
  process.stdout.write('\n');
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** A small seeded generator, so two runs read the same mix. */
function mulberry32(seedValue: number): () => number {
  let a = seedValue;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const db = new PostgresDatabase(url, 10);
const platformKey = generateApiKey('platform');
await migrate(db, () => syncPlatformKey(db, platformKey));
const config = loadConfig({
  DATABASE_URL: url,
  BOOTSTRAP: 'off',
  LOG_LEVEL: 'silent',
  RATE_LIMIT_RPS: '0',
  PLATFORM_API_KEY: platformKey,
});
const { app } = await buildApp({ config, db });
// Time spent in the server per request (Fastify's own measure, from request to response sent), to
// tell it apart from the client's side of the loopback.
let serverMs = Number.NaN;
app.addHook('onResponse', async (_request, reply) => {
  serverMs = reply.elapsedTime;
});
await app.ready();

async function admin(path: string, body: unknown): Promise<any> {
  const response = await app.inject({
    method: 'POST',
    url: path,
    headers: { 'x-api-key': platformKey, 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
  if (response.statusCode !== 201) throw new Error(`${path}: ${response.body}`);
  return response.json();
}

const t0 = new Date();
// A database seeded by an earlier run is measured again as it is (the payments end at that run's time).
const seeded = await db.query<{ id: string; last: Date }>(
  `SELECT t.id, max(p.created_at) AS last FROM tenants t JOIN payments p ON p.tenant_id = t.id AND p.mode = 'test'
    WHERE t.name = 'Statement benchmark' GROUP BY t.id HAVING count(*) >= $1 LIMIT 1`,
  [ROWS],
);
let tenantId: string;
if (seeded.rows[0]) {
  tenantId = seeded.rows[0].id;
  t0.setTime(seeded.rows[0].last.getTime());
  process.stdout.write(`reusing the payments seeded earlier for tenant ${tenantId}\n`);
} else {
  tenantId = (await admin('/v1/admin/tenants', { name: 'Statement benchmark' })).id;
  const neighbour = await admin('/v1/admin/tenants', { name: 'Statement benchmark neighbour' });
  process.stdout.write(
    `seeding ${ROWS.toLocaleString('en')} payments over ${DAYS} days (+ ${(ROWS / 10).toLocaleString('en')} of another tenant, ${(ROWS / 20).toLocaleString('en')} in live mode)\n`,
  );
  const seedingStarted = performance.now();
  await seed(db, tenantId, 'test', ROWS, t0, 1);
  await seed(db, neighbour.id, 'test', ROWS / 10, t0, 2);
  await seed(db, tenantId, 'live', ROWS / 20, t0, 3);
  process.stdout.write(`inserted in ${((performance.now() - seedingStarted) / 1000).toFixed(1)} s\n`);
}
const key = (await admin(`/v1/admin/tenants/${tenantId}/api-keys`, { mode: 'test' })).key as string;
const started = performance.now();
await db.exec('VACUUM (ANALYZE) payments');
process.stdout.write(`VACUUM ANALYZE in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
const counts = await db.query<{ status: string; n: bigint }>(
  `SELECT status, count(*) AS n FROM payments WHERE tenant_id = $1 AND mode = 'test' GROUP BY status ORDER BY n DESC`,
  [tenantId],
);
process.stdout.write(`tenant's test payments: ${counts.rows.map((r) => `${r.status} ${r.n}`).join(', ')}\n`);
const sizes = await db.query<{ name: string; size: string }>(
  `SELECT c.relname AS name, pg_size_pretty(pg_relation_size(c.oid)) AS size FROM pg_class c
    WHERE c.relname = 'payments' OR c.relname IN (SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = 'payments'::regclass)
    ORDER BY c.relname`,
);
process.stdout.write(`sizes: ${sizes.rows.map((r) => `${r.name} ${r.size}`).join(', ')}\n`);

// Deep cursors: positions of payments sampled all over the tenant's history.
const sampled = await db.query<{ id: string; us: bigint }>(
  `SELECT id, (extract(epoch FROM created_at) * 1000000)::bigint AS us
     FROM payments TABLESAMPLE SYSTEM (0.5) REPEATABLE (7) WHERE tenant_id = $1 AND mode = 'test' LIMIT 500`,
  [tenantId],
);
const cursors = sampled.rows.map((r) => encodeCursor({ createdAtUs: r.us, id: r.id }));

const address = await app.listen({ host: '127.0.0.1', port: 0 });
const http = new Pool(address, { connections: 1, pipelining: 1 });

const serverTimes: number[] = [];

async function read(path: string): Promise<{ ms: number; body: any }> {
  serverMs = Number.NaN;
  const begin = performance.now();
  const response = await http.request({ method: 'GET', path, headers: { 'x-api-key': key } });
  const text = await response.body.text();
  const ms = performance.now() - begin;
  if (response.statusCode !== 200) throw new Error(`${path}: ${response.statusCode} ${text}`);
  serverTimes.push(serverMs);
  return { ms, body: JSON.parse(text) };
}

const random = mulberry32(20260331);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const dayAgo = (days: number) => businessDate(new Date(t0.getTime() - days * 86_400_000));
const anyDay = () => dayAgo(Math.floor(random() * DAYS));
const beneficiaryId = () => md5Uuid(`beneficiary-${Math.floor(random() * BENEFICIARIES)}`);
const customerId = () => md5Uuid(`customer-${Math.floor(random() * CUSTOMERS)}`);
const STATUSES = ['settled', 'settled', 'failed', 'reversed', 'submitted', 'unknown', 'pending'] as const;

// The mix: [kind, weight, path], drawn at random by weight.
const MIX: Array<[string, number, () => string]> = [
  ['first page', 12, () => '/v1/payments'],
  ['deep cursor', 14, () => `/v1/payments?cursor=${pick(cursors)}`],
  ['limit=100 deep cursor', 4, () => `/v1/payments?limit=100&cursor=${pick(cursors)}`],
  ['status', 6, () => `/v1/payments?status=${pick(STATUSES)}`],
  ['status + deep cursor', 6, () => `/v1/payments?status=${pick(STATUSES)}&cursor=${pick(cursors)}`],
  ['beneficiaryId', 6, () => `/v1/payments?beneficiaryId=${beneficiaryId()}`],
  ['customerId', 6, () => `/v1/payments?customerId=${customerId()}`],
  [
    'one day (from=to)',
    10,
    () => {
      const d = anyDay();
      return `/v1/payments?from=${d}&to=${d}`;
    },
  ],
  [
    'one day + deep cursor',
    6,
    () => {
      const d = anyDay();
      return `/v1/payments?from=${d}&to=${d}&cursor=${pick(cursors)}`;
    },
  ],
  [
    'week',
    5,
    () => {
      const d = Math.floor(random() * (DAYS - 7));
      return `/v1/payments?from=${dayAgo(d + 6)}&to=${dayAgo(d)}`;
    },
  ],
  [
    'month (30 days)',
    5,
    () => {
      const d = Math.floor(random() * (DAYS - 30));
      return `/v1/payments?from=${dayAgo(d + 29)}&to=${dayAgo(d)}`;
    },
  ],
  ['whole range, limit=100', 2, () => `/v1/payments?from=${dayAgo(DAYS + 5)}&to=${dayAgo(-1)}&limit=100`],
  [
    'from only / to only',
    4,
    () =>
      random() < 0.5
        ? `/v1/payments?from=${dayAgo(Math.floor(random() * 10))}`
        : `/v1/payments?to=${dayAgo(60 + Math.floor(random() * 20))}`,
  ],
  [
    'status + range',
    5,
    () => {
      const d = Math.floor(random() * (DAYS - 7));
      return `/v1/payments?status=${pick(STATUSES)}&from=${dayAgo(d + 6)}&to=${dayAgo(d)}`;
    },
  ],
  [
    'customerId + range',
    3,
    () => {
      const d = Math.floor(random() * (DAYS - 30));
      return `/v1/payments?customerId=${customerId()}&from=${dayAgo(d + 29)}&to=${dayAgo(d)}`;
    },
  ],
  ['beneficiaryId + status', 2, () => `/v1/payments?beneficiaryId=${beneficiaryId()}&status=settled`],
  [
    'next page of a day',
    4,
    () => {
      const d = anyDay();
      return `/v1/payments?from=${d}&to=${d}`;
    },
  ],
];
const totalWeight = MIX.reduce((sum, [, w]) => sum + w, 0);

/** Reads the mix; `next page of a day` reads a day's first page, then follows its cursor up to 3 pages. */
async function runMix(reads: number): Promise<Map<string, number[]>> {
  const byKind = new Map<string, number[]>();
  const record = (kind: string, ms: number) => {
    const list = byKind.get(kind) ?? [];
    list.push(ms);
    byKind.set(kind, list);
  };
  let done = 0;
  while (done < reads) {
    let roll = random() * totalWeight;
    const [kind, , path] = MIX.find(([, w]) => (roll -= w) < 0) ?? MIX[0]!;
    const url = path();
    const first = await read(url);
    done += 1;
    if (kind !== 'next page of a day') {
      record(kind, first.ms);
      continue;
    }
    record('one day (from=to)', first.ms);
    let cursor: string | null = first.body.next_cursor;
    for (let page = 0; page < 3 && cursor && done < reads; page += 1) {
      const next = await read(`${url}&cursor=${cursor}`);
      done += 1;
      record(kind, next.ms);
      cursor = next.body.next_cursor;
    }
  }
  return byKind;
}

process.stdout.write(`warming up (${WARMUP_READS} reads)…\n`);
await runMix(WARMUP_READS);
process.stdout.write(
  `measuring ${READS} page reads (sequential, one keep-alive connection, server in this process)…\n`,
);
serverTimes.length = 0;
const loadBefore = loadavg()[0]!;
const byKind = await runMix(READS);
const loadAfter = loadavg()[0]!;
const allMs = [...byKind.values()].flat().sort((a, b) => a - b);
const line = (label: string, list: number[]) => {
  const sorted = [...list].sort((a, b) => a - b);
  return `${label.padEnd(26)} ${String(sorted.length).padStart(5)}  p50 ${percentile(sorted, 50).toFixed(2).padStart(6)} ms  p99 ${percentile(sorted, 99).toFixed(2).padStart(6)} ms  max ${sorted[sorted.length - 1]!.toFixed(2).padStart(6)} ms`;
};
process.stdout.write(
  `\nclient-measured (request sent → body read), machine load average ${loadBefore.toFixed(1)} → ${loadAfter.toFixed(1)} on ${cpus().length} CPUs\n`,
);
process.stdout.write(`${line('ALL', allMs)}\n`);
process.stdout.write(`${line('ALL, server side', serverTimes)}\n`);
for (const [kind] of MIX) if (byKind.has(kind)) process.stdout.write(`${line(kind, byKind.get(kind)!)}\n`);

if (EXPORT_DAYS > 0) {
  const from = dayAgo(EXPORT_DAYS);
  const to = dayAgo(1);
  global.gc?.();
  const base = process.memoryUsage();
  let peakRss = base.rss;
  let peakHeap = base.heapUsed;
  const sampler = setInterval(() => {
    const now = process.memoryUsage();
    peakRss = Math.max(peakRss, now.rss);
    peakHeap = Math.max(peakHeap, now.heapUsed);
  }, 20);
  const begin = performance.now();
  const response = await http.request({
    method: 'GET',
    path: `/v1/payments/export?from=${from}&to=${to}`,
    headers: { 'x-api-key': key },
  });
  let bytes = 0;
  let lines = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    for (const byte of chunk) if (byte === 10) lines += 1;
  }
  const seconds = (performance.now() - begin) / 1000;
  clearInterval(sampler);
  process.stdout.write(
    `\nexport ${from}..${to}: HTTP ${response.statusCode}, ${(lines - 1).toLocaleString('en')} payments, ${(bytes / 1e6).toFixed(1)} MB in ${seconds.toFixed(1)} s ` +
      `(${Math.round((lines - 1) / seconds).toLocaleString('en')} rows/s); heap ${(base.heapUsed / 1e6).toFixed(0)} MB before, peak ${(peakHeap / 1e6).toFixed(0)} MB; ` +
      `RSS ${(base.rss / 1e6).toFixed(0)} MB before, peak ${(peakRss / 1e6).toFixed(0)} MB\n`,
  );
}

await http.close();
await app.close();
await db.close();
