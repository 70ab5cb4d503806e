// What the multi-process suites (test/process/) share: the tenant set-up through the admin API of a
// running process, the payout mixes, bounded condition waits, and the invariants read straight from
// the database (pg), each reported with the offending rows.
import { reportRollupDrift } from '../../src/db/repositories/report-rollups.ts';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { verifyWebhook } from '../../sdk/src/webhooks.ts';
import { generateApiKey } from '../../src/domain/api-keys.ts';
import { ChaosClient, type KeyRecord, type PayoutSpec } from './chaos-client.ts';
import { createTestDatabase } from './harness.ts';
import { ServiceCluster, type NodeSpec } from './service-cluster.ts';
import { TestReceiver } from './webhooks.ts';
import { until } from './until.ts';

const TERMINAL = ['settled', 'failed', 'reversed'] as const;
/** Deliver amounts below this fail before the rail (USD 1 at the seeded 925.00 Bs rate). */
const RAIL_FLOOR_MINOR = 92_500;

/** Short sandbox and worker delays: a payout resolves in well under a second. */
export const FAST_ENV: Record<string, string> = {
  SANDBOX_SETTLE_DELAY_MS: '300',
  SANDBOX_REVERSE_DELAY_MS: '800',
  SANDBOX_RAIL_TIMEOUT_MS: '500',
  REAPER_INTERVAL_MS: '200',
  WEBHOOK_BACKOFF_SCALE: '0.01',
  DISPATCHER_INTERVAL_MS: '50',
  REPORT_FOLD_INTERVAL_MS: '200',
  WEBHOOK_TIMEOUT_MS: '2000',
  QUOTE_TTL_SECONDS: '600',
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Database access for assertions

/** The application_name of the test's own sessions (deadlocksOf does not wait for them). */
export const ASSERTIONS_APP = 'bds-test-assertions';

/** A small pool on the test database; errors of idle connections (a server restart) are ignored. */
function openPool(url: string, max = 4): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 5_000,
    application_name: ASSERTIONS_APP,
  });
  pool.on('error', () => undefined);
  return pool;
}

export async function rows<T = any>(pool: pg.Pool, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await pool.query(sql, params)).rows as T[];
}

/**
 * `pg_stat_database.deadlocks` of `dbname`, read once no other session is connected to it (the
 * service processes have exited and their backends have flushed their statistics), bounded.
 */
export async function deadlocksOf(
  adminUrl: string,
  dbname: string,
  timeoutMs = 15_000,
): Promise<{ deadlocks: number; others: number }> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: ASSERTIONS_APP });
  await client.connect();
  try {
    let others = -1;
    await until(
      'no other session on the database',
      async () => {
        const r = await client.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name <> $2`,
          [dbname, ASSERTIONS_APP],
        );
        others = r.rows[0].n;
        return others === 0;
      },
      { timeoutMs, intervalMs: 100 },
    ).catch(() => undefined); // reported as `others`
    await client.query('SELECT pg_stat_clear_snapshot()');
    const r = await client.query(`SELECT deadlocks::int AS deadlocks FROM pg_stat_database WHERE datname = $1`, [
      dbname,
    ]);
    return { deadlocks: r.rows[0]?.deadlocks ?? -1, others };
  } finally {
    await client.end();
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP set-up with the platform key

export interface Tenant {
  tenantId: string;
  apiKey: string;
  funding: bigint;
  webhookSecret?: string;
  /** The mode of its key, funding and payouts (default test). */
  mode?: 'test' | 'live';
}

/** One API call to a running service, bounded; the body parsed when it is JSON. */
export async function call(
  base: string,
  key: string,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any; text: string; headers: Headers }> {
  const response = await fetch(`${base}${url}`, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await response.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text, headers: response.headers };
}

export interface ServicesContext {
  url: string;
  dbname: string;
  /** The test's own connections to the database, for its assertions. */
  pool: pg.Pool;
  receiver: TestReceiver;
  platformKey: string;
  cluster: ServiceCluster;
}

/**
 * Service processes on a database of their own (a fresh one on the DATABASE_URL server, or the one
 * given), a webhook receiver and the platform key; everything stopped, closed and dropped afterwards,
 * whatever `work` did.
 */
export async function withServices(
  nodes: NodeSpec[],
  env: Record<string, string>,
  work: (s: ServicesContext) => Promise<void>,
  database?: { url: string; drop(): Promise<void> },
): Promise<void> {
  const db = database ?? (await createTestDatabase());
  const url = db.url!;
  const pool = openPool(url);
  const receiver = await TestReceiver.start();
  const platformKey = generateApiKey('platform');
  let cluster: ServiceCluster | undefined;
  try {
    cluster = await ServiceCluster.start(nodes, { DATABASE_URL: url, PLATFORM_API_KEY: platformKey, ...env });
    await work({ url, dbname: new URL(url).pathname.slice(1), pool, receiver, platformKey, cluster });
  } finally {
    await cluster?.stopAll();
    await receiver.close();
    await pool.end();
    await db.drop();
  }
}

async function expectStatus(
  what: string,
  result: Promise<{ status: number; json: any; text: string }>,
  status: number,
) {
  const r = await result;
  if (r.status !== status) throw new Error(`${what}: expected ${status}, got ${r.status}: ${r.text}`);
  return r.json;
}

/**
 * A prefunded tenant with a test key; optionally its webhook endpoint, a generous tenant limit rule
 * and a customer rule per customer (so payouts lock and count the measured counters too).
 */
export async function setupTenant(
  base: string,
  platformKey: string,
  options: {
    funding: bigint;
    webhookUrl?: string;
    customerIds?: string[];
    limitRules?: boolean;
    name?: string;
    mode?: 'test' | 'live';
  },
): Promise<Tenant> {
  const mode = options.mode ?? 'test';
  const tenant = await expectStatus(
    'create tenant',
    call(base, platformKey, 'POST', '/v1/admin/tenants', { name: options.name ?? 'Chaos Remesas' }),
    201,
  );
  const tenantId: string = tenant.id;
  const key = await expectStatus(
    'issue key',
    call(base, platformKey, 'POST', `/v1/admin/tenants/${tenantId}/api-keys`, { mode }),
    201,
  );
  await expectStatus(
    'fund',
    call(
      base,
      platformKey,
      'POST',
      `/v1/admin/tenants/${tenantId}/fundings`,
      { mode, asset: 'BS', amount: Number(options.funding) },
      { 'idempotency-key': `fund-${tenantId}` },
    ),
    201,
  );
  let webhookSecret: string | undefined;
  if (options.webhookUrl) {
    const endpoint = await expectStatus(
      'webhook endpoint',
      call(base, platformKey, 'PUT', `/v1/admin/tenants/${tenantId}/webhook-endpoint`, {
        mode,
        url: options.webhookUrl,
      }),
      200,
    );
    webhookSecret = endpoint.secret;
  }
  if (options.limitRules) {
    await expectStatus(
      'tenant limit rule',
      call(base, platformKey, 'POST', '/v1/admin/limit-rules', {
        scope: 'tenant',
        tenantId,
        method: '*',
        per_tx_max: 10_000_000_000,
        daily_max: 10_000_000_000_000,
        daily_count_max: 1_000_000,
      }),
      201,
    );
    for (const subjectId of options.customerIds ?? []) {
      await expectStatus(
        'customer limit rule',
        call(base, platformKey, 'POST', '/v1/admin/limit-rules', {
          scope: 'customer',
          tenantId,
          subjectId,
          method: '*',
          per_tx_max: 5_000_000_000,
          daily_max: 5_000_000_000_000,
        }),
        201,
      );
    }
  }
  return { tenantId, apiKey: key.key, funding: options.funding, webhookSecret, mode };
}

// ---------------------------------------------------------------------------------------------
// Payout mixes and what each one must end as

export type OutcomeId =
  | 'V99990001'
  | 'V99990002'
  | 'V99990003'
  | 'V99990004'
  | 'V99990005'
  | 'V99990006'
  | 'V99990007'
  | 'V99990008'
  | 'V99990009'
  | 'plain'
  | 'below_floor';

interface Expected {
  status: 'settled' | 'failed' | 'reversed';
  reason?: string;
  /** Fails before any rail call: nothing charged, no transfer at the rail. */
  beforeRail: boolean;
}

function expectedOutcome(spec: PayoutSpec): Expected {
  if (spec.deliver < RAIL_FLOOR_MINOR)
    return { status: 'failed', reason: 'amount_below_rail_minimum', beforeRail: true };
  switch (spec.nationalId) {
    case 'V99990003':
      return { status: 'failed', reason: 'rail_rejected', beforeRail: false };
    case 'V99990004':
      return { status: 'failed', reason: 'beneficiary_mismatch', beforeRail: false };
    case 'V99990005':
      return { status: 'failed', reason: 'bank_unreachable', beforeRail: false };
    case 'V99990006':
      return { status: 'failed', reason: 'invalid_destination_account', beforeRail: false };
    case 'V99990007':
      return { status: 'reversed', beforeRail: false };
    default:
      return { status: 'settled', beforeRail: false };
  }
}

/**
 * `n` payouts cycling through `outcomes` (weights by repetition), with customer ids cycling through
 * `customerIds` plus none. Plain beneficiaries come from a small pool of national ids, so concurrent
 * payouts register the same inline beneficiary.
 */
export function payoutMix(
  n: number,
  options: { prefix: string; outcomes: OutcomeId[]; customerIds?: string[]; plainPool?: number },
): PayoutSpec[] {
  const customers = [...(options.customerIds ?? []), undefined];
  const plainPool = options.plainPool ?? 12;
  const specs: PayoutSpec[] = [];
  for (let i = 0; i < n; i += 1) {
    const outcome = options.outcomes[i % options.outcomes.length]!;
    const plainId = `V2${String(1 + ((i * 7) % plainPool)).padStart(7, '0')}`;
    const nationalId = outcome === 'plain' || outcome === 'below_floor' ? plainId : outcome;
    const deliver = outcome === 'below_floor' ? 50_000 + ((i * 37) % 40_000) : 100_000 + ((i * 7919) % 1_900_000);
    specs.push({
      key: `${options.prefix}-${i}`,
      nationalId,
      deliver,
      customerId: customers[i % customers.length],
      // The requested pago_movil is unavailable for V99990008: with an account it switches to transferencia.
      ...(outcome === 'V99990008' ? { accountNumber: '01020000000000000008' } : {}),
    });
  }
  return specs;
}

/** Runs `work` for each item no earlier than `startMs + i * paceMs` from now, `concurrency` at a time. */
export async function paced<T>(
  items: readonly T[],
  concurrency: number,
  paceMs: number,
  work: (item: T) => Promise<unknown>,
): Promise<void> {
  const t0 = Date.now();
  let next = 0;
  const runners = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const i = next;
      next += 1;
      const wait = t0 + i * paceMs - Date.now();
      if (wait > 0) await sleep(wait);
      await work(items[i]!);
    }
  });
  await Promise.all(runners);
}

// ---------------------------------------------------------------------------------------------
// Waiting

/** Polls `probe` until it reports done or the deadline passes; probe errors count as not done. */
export async function waitFor(
  timeoutMs: number,
  probe: () => Promise<{ done: boolean; detail: string }>,
  intervalMs = 200,
): Promise<{ done: boolean; ms: number; detail: string }> {
  const started = Date.now();
  let detail = '(never probed)';
  const done = await until(
    'the probe done',
    async () => {
      try {
        const r = await probe();
        detail = r.detail;
        return r.done;
      } catch (error) {
        detail = `probe failed: ${(error as Error).message}`;
        return false;
      }
    },
    { timeoutMs, intervalMs },
  ).catch(() => false);
  return { done, ms: Date.now() - started, detail };
}

/** Where the tenant's payouts and events stand: every payment terminal, every event published. */
async function settlementProgress(
  pool: pg.Pool,
  tenantId: string,
  expectedPayments: number,
  published = true,
): Promise<{ done: boolean; detail: string }> {
  const [p] = await rows(
    pool,
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE status NOT IN ('settled', 'failed', 'reversed'))::int AS open,
            count(*) FILTER (WHERE beneficiary->>'nationalId' = 'V99990007' AND funding_account IS NOT NULL AND status <> 'reversed')::int AS unreversed
       FROM payments WHERE tenant_id = $1`,
    [tenantId],
  );
  const byStatus = await rows(
    pool,
    `SELECT status, count(*)::int AS n FROM payments WHERE tenant_id = $1 GROUP BY status ORDER BY status`,
    [tenantId],
  );
  const [e] = await rows(
    pool,
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE status <> 'published')::int AS unpublished FROM outbox_events WHERE tenant_id = $1`,
    [tenantId],
  );
  const [r] = await rows(
    pool,
    `SELECT count(*) FILTER (WHERE reversal_acknowledged_at IS NULL)::int AS unacknowledged
       FROM sandbox_rail_transfers WHERE tenant_id = $1 AND reverse_at IS NOT NULL`,
    [tenantId],
  );
  const total = Number(p?.total ?? 0);
  const open = Number(p?.open ?? 0);
  const unreversed = Number(p?.unreversed ?? 0);
  const done =
    total >= expectedPayments &&
    open === 0 &&
    unreversed === 0 &&
    (!published || e.unpublished === 0) &&
    r.unacknowledged === 0;
  const detail = `payments ${total}/${expectedPayments} ${JSON.stringify(Object.fromEntries(byStatus.map((b) => [b.status, b.n])))}, V99990007 not yet reversed ${unreversed}, events ${e.total} (${e.unpublished} not published), reversals not acknowledged ${r.unacknowledged}`;
  return { done, detail };
}

/** Writes every process's output and the client's records under a temporary directory; returns it. */
function saveArtifacts(name: string, parts: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), `bds-${name}-`));
  for (const [file, text] of Object.entries(parts)) writeFileSync(path.join(dir, file), text);
  return dir;
}

function clientDump(client: ChaosClient): string {
  return [...client.records.values()].map((r) => ChaosClient.describe(r)).join('\n');
}

// ---------------------------------------------------------------------------------------------
// Invariants

interface InvariantInput {
  pool: pg.Pool;
  tenant: Tenant;
  client: ChaosClient;
  /** The webhook receiver of the tenant's endpoint (absent: receipt not checked). */
  receiver?: TestReceiver;
  /** Check each payment's final status against its sandbox trigger (expectedOutcome). */
  checkOutcomes?: boolean;
  /** Check the sandbox rail's transfers (default true); false: the payouts went to other rails, which the caller checks. */
  sandboxRail?: boolean;
  /**
   * The tenant has a webhook endpoint, so every event must end published (default true). False: live
   * mode refuses a loopback endpoint, the events wait for one, and only their existence is checked.
   */
  published?: boolean;
}

const show = (value: unknown, max = 15) => {
  const list = Array.isArray(value) ? value : [value];
  const text = JSON.stringify(list.slice(0, max), (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
  return list.length > max ? `${text} … (${list.length} in all)` : text;
};

/**
 * Every invariant of a finished run, client side and database side. Returns the violations (empty
 * when all hold), each naming the offending keys or rows.
 */
async function invariantViolations(input: InvariantInput): Promise<string[]> {
  const { pool, tenant, client } = input;
  const t = tenant.tenantId;
  const mode = tenant.mode ?? 'test';
  const violations: string[] = [];
  const fail = (what: string, offending: unknown) => violations.push(`${what}: ${show(offending)}`);
  const records = [...client.records.values()];

  // --- client side --------------------------------------------------------------------------
  const several = records.filter((r) => r.paymentIds.size > 1);
  if (several.length)
    fail(
      'keys answered with more than one payment id',
      several.map((r) => ({ key: r.spec.key, ids: [...r.paymentIds] })),
    );
  const serverErrors = client.serverErrors();
  if (serverErrors.length) fail('500 answers (a bug whatever happened around them)', serverErrors);
  const gaveUp = records.filter((r) => r.gaveUp);
  if (gaveUp.length)
    fail(
      'keys without a final answer in time',
      gaveUp.map((r) => ({ key: r.spec.key, gaveUp: r.gaveUp, last: r.answers.slice(-3) })),
    );
  const not201 = records.filter((r) => r.final && r.final.status !== 201);
  if (not201.length)
    fail(
      'keys whose final answer is not a 201',
      not201.map((r) => ({ key: r.spec.key, final: r.final, answers: r.answers.slice(-4) })),
    );

  // --- keys and payments ----------------------------------------------------------------------
  const payments = await rows(
    pool,
    `SELECT id, quote_id, status, status_reason, source_asset, source_amount::text, payout_amount::text, fee_amount::text,
            compensated, funding_account, method, method_changed, customer_id, beneficiary_id, usage_day::text AS usage_day,
            beneficiary->>'nationalId' AS national_id, resolution_parked_at
       FROM payments WHERE tenant_id = $1`,
    [t],
  );
  const byId = new Map(payments.map((p) => [p.id as string, p]));
  const keyRows = await rows(
    pool,
    `SELECT key, status, payment_id, response_status, (response_body::json->>'id') AS answered_id
       FROM idempotency_keys WHERE tenant_id = $1 AND mode = $3 AND key <> $2`,
    [t, `fund-${t}`, mode],
  );
  const keyByName = new Map(keyRows.map((k) => [k.key as string, k]));

  const namedTwice = await rows(
    pool,
    `SELECT payment_id, array_agg(key) AS keys FROM idempotency_keys WHERE tenant_id = $1 AND payment_id IS NOT NULL
      GROUP BY payment_id HAVING count(*) > 1`,
    [t],
  );
  if (namedTwice.length) fail('payments named by more than one idempotency key', namedTwice);
  const unnamed = await rows(
    pool,
    `SELECT p.id, p.status, p.created_at FROM payments p
      WHERE p.tenant_id = $1 AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.tenant_id = p.tenant_id AND k.payment_id = p.id)`,
    [t],
  );
  if (unnamed.length) fail('payments no idempotency key names', unnamed);
  const quoteTwice = await rows(
    pool,
    `SELECT quote_id, array_agg(id) AS payments FROM payments WHERE tenant_id = $1 GROUP BY quote_id HAVING count(*) > 1`,
    [t],
  );
  if (quoteTwice.length) fail('quotes consumed by more than one payment', quoteTwice);
  const quoteMismatch = await rows(
    pool,
    `SELECT p.id, p.quote_id, q.payment_id AS quote_payment, q.consumed_at FROM payments p
       LEFT JOIN quotes q ON q.tenant_id = p.tenant_id AND q.id = p.quote_id
      WHERE p.tenant_id = $1 AND q.payment_id IS DISTINCT FROM p.id`,
    [t],
  );
  if (quoteMismatch.length) fail('payments whose quote does not name them', quoteMismatch);

  const clientVsDb: unknown[] = [];
  const specOfPayment = new Map<string, PayoutSpec>();
  for (const r of records) {
    const id = r.final?.paymentId;
    if (!id) continue;
    const k = keyByName.get(r.spec.key);
    const p = byId.get(id);
    specOfPayment.set(id, r.spec);
    if (!p) clientVsDb.push({ key: r.spec.key, problem: 'answered payment id does not exist', id });
    else if (!k) clientVsDb.push({ key: r.spec.key, problem: 'no idempotency key row', id });
    else if (k.payment_id !== id)
      clientVsDb.push({ key: r.spec.key, problem: 'key row names another payment', answered: id, key_row: k });
    else if (p.quote_id !== r.quoteId)
      clientVsDb.push({
        key: r.spec.key,
        problem: 'payment consumed another quote',
        quote_sent: r.quoteId,
        payment: p.quote_id,
      });
  }
  if (clientVsDb.length) fail('client answers that disagree with the database', clientVsDb);
  const answeredIds = new Set(records.flatMap((r) => [...r.paymentIds]));
  const orphans = payments.filter((p) => !answeredIds.has(p.id));
  if (orphans.length) fail('payments no client answer named (a second payment for a key, or an answer lost)', orphans);

  // --- statuses ---------------------------------------------------------------------------------
  const open = payments.filter((p) => !(TERMINAL as readonly string[]).includes(p.status));
  if (open.length) fail('payments not terminal', open);
  if (input.checkOutcomes !== false) {
    const wrong: unknown[] = [];
    for (const p of payments) {
      const spec = specOfPayment.get(p.id);
      if (!spec) continue;
      const want = expectedOutcome(spec);
      if (
        p.status !== want.status ||
        (want.reason && p.status_reason !== want.reason) ||
        want.beforeRail !== (p.funding_account === null)
      ) {
        wrong.push({
          payment: p.id,
          key: spec.key,
          nationalId: spec.nationalId,
          deliver: spec.deliver,
          want,
          got: { status: p.status, reason: p.status_reason, funding_account: p.funding_account },
        });
      }
      if (spec.nationalId === 'V99990008' && (p.method !== 'transferencia' || p.method_changed !== true)) {
        wrong.push({
          payment: p.id,
          key: spec.key,
          problem: 'V99990008 must switch to transferencia',
          method: p.method,
          method_changed: p.method_changed,
        });
      }
    }
    if (wrong.length) fail('payments whose outcome is not the one their sandbox trigger decides', wrong);
  }

  // --- ledger -------------------------------------------------------------------------------------
  const unbalanced = await rows(
    pool,
    `SELECT tenant_id, transaction_id, asset, sum(amount)::text AS total FROM ledger_postings
      GROUP BY tenant_id, transaction_id, asset HAVING sum(amount) <> 0`,
  );
  if (unbalanced.length) fail('unbalanced ledger transactions', unbalanced);
  const assetTotals = await rows(
    pool,
    `SELECT coalesce(a.asset, p.asset) AS asset, coalesce(a.total, 0)::text AS accounts, coalesce(p.total, 0)::text AS postings
       FROM (SELECT asset, sum(balance) AS total FROM ledger_accounts GROUP BY asset) a
       FULL JOIN (SELECT asset, sum(amount) AS total FROM ledger_postings GROUP BY asset) p ON p.asset = a.asset
      WHERE coalesce(a.total, 0) <> 0 OR coalesce(p.total, 0) <> 0`,
  );
  if (assetTotals.length) fail('assets whose account balances or postings do not sum to zero', assetTotals);
  const drift = await rows(
    pool,
    `SELECT a.tenant_id, a.mode, a.asset, a.kind, a.balance::text, coalesce(s.total, 0)::text AS postings
       FROM (SELECT tenant_id, mode, asset, kind, sum(balance) AS balance FROM ledger_accounts GROUP BY tenant_id, mode, asset, kind) a
       LEFT JOIN (SELECT lp.tenant_id, lp.mode, lp.asset, lp.account_kind, sum(lp.amount) AS total FROM ledger_postings lp
                   GROUP BY lp.tenant_id, lp.mode, lp.asset, lp.account_kind) s
         ON s.tenant_id = a.tenant_id AND s.mode = a.mode AND s.asset = a.asset AND s.account_kind = a.kind
      WHERE a.balance <> coalesce(s.total, 0)`,
  );
  if (drift.length) fail('ledger accounts whose balance differs from their postings', drift);
  const postingsWithoutAccount = await rows(
    pool,
    `SELECT lp.tenant_id, lp.mode, lp.asset, lp.account_kind, sum(lp.amount)::text AS total FROM ledger_postings lp
      WHERE NOT EXISTS (SELECT 1 FROM ledger_accounts a WHERE a.tenant_id = lp.tenant_id AND a.mode = lp.mode AND a.asset = lp.asset AND a.kind = lp.account_kind)
      GROUP BY 1, 2, 3, 4`,
  );
  if (postingsWithoutAccount.length) fail('postings to accounts that have no balance row', postingsWithoutAccount);
  // The payout report's balance history ends, for every charted account, at the balance it holds.
  const historyDrift = await rows(
    pool,
    `SELECT a.tenant_id, a.mode, a.asset, a.kind, a.balance::text, h.balance::text AS history
       FROM ledger_accounts a
       LEFT JOIN LATERAL (SELECT balance FROM ledger_balance_history h
                           WHERE h.tenant_id = a.tenant_id AND h.mode = a.mode AND h.asset = a.asset AND h.kind = a.kind
                           ORDER BY h.at DESC, h.id DESC LIMIT 1) h ON true
      WHERE a.kind IN ('prefunding', 'credit_receivable') AND a.balance_changed_at IS NOT NULL AND h.balance IS DISTINCT FROM a.balance`,
  );
  if (historyDrift.length) fail('charted accounts whose balance history does not end at their balance', historyDrift);
  // The payout report's rollups, as the workers folded them while payouts ran and processes were
  // killed, plus what they have not folded yet, agree with the payments and attempts themselves.
  const rollupDrift = await reportRollupDrift({
    query: (sql, params) => pool.query(sql, params as unknown[]) as never,
    exec: async (sql) => void (await pool.query(sql)),
  });
  if (rollupDrift.length)
    fail('payout report rollups that disagree with the payments and webhook attempts', rollupDrift);

  const entryKinds = await rows(
    pool,
    `SELECT p.id, p.status, p.funding_account, coalesce(array_agg(t.kind ORDER BY t.kind) FILTER (WHERE t.kind IS NOT NULL), '{}') AS kinds
       FROM payments p LEFT JOIN ledger_transactions t ON t.tenant_id = p.tenant_id AND t.payment_id = p.id
      WHERE p.tenant_id = $1 GROUP BY p.id, p.status, p.funding_account`,
    [t],
  );
  const wrongEntries = entryKinds.filter((e) => {
    const kinds = (e.kinds as string[]).join(',');
    if (e.status === 'settled') return kinds !== 'payout,payout_settlement';
    if (e.status === 'reversed') return kinds !== 'payout,payout_reversal,payout_settlement';
    if (e.status === 'failed') return e.funding_account === null ? kinds !== '' : kinds !== 'payout,payout_failure';
    return false;
  });
  if (wrongEntries.length) fail('payments whose ledger entries do not match their status', wrongEntries);

  const [position] = await rows(
    pool,
    `SELECT coalesce((SELECT -balance FROM ledger_accounts WHERE tenant_id = $1 AND mode = $2 AND asset = 'BS' AND kind = 'prefunding'), 0)::text AS available`,
    [t, mode],
  );
  let expectedAvailable = tenant.funding;
  for (const p of payments) {
    if (p.status === 'settled') expectedAvailable -= BigInt(p.source_amount);
    if (p.status === 'reversed') expectedAvailable -= BigInt(p.source_amount) - BigInt(p.payout_amount);
  }
  if (BigInt(position.available) !== expectedAvailable) {
    fail('prefunding balance differs from funding − settled − fees of reversed', {
      available: position.available,
      expected: expectedAvailable.toString(),
      funding: tenant.funding.toString(),
    });
  }

  // --- limit usage: what accepted payouts consumed, minus what failures and reversals gave back ----
  const usage = await rows(
    pool,
    `WITH expected AS (
       SELECT kind, subject_id, method, usage_day AS business_date, sum(payout_amount) AS amount, count(*) AS count
         FROM (SELECT 'tenant' AS kind, tenant_id AS subject_id, method, usage_day, payout_amount FROM payments
                WHERE tenant_id = $1 AND funding_account IS NOT NULL AND status NOT IN ('failed', 'reversed')
               UNION ALL
               SELECT 'customer', customer_id, method, usage_day, payout_amount FROM payments
                WHERE tenant_id = $1 AND funding_account IS NOT NULL AND status NOT IN ('failed', 'reversed') AND customer_id IS NOT NULL
               UNION ALL
               SELECT 'beneficiary', beneficiary_id, method, usage_day, payout_amount FROM payments
                WHERE tenant_id = $1 AND funding_account IS NOT NULL AND status NOT IN ('failed', 'reversed')) x
        GROUP BY 1, 2, 3, 4)
     SELECT coalesce(u.subject_kind, e.kind) AS kind, coalesce(u.subject_id, e.subject_id) AS subject_id, coalesce(u.method, e.method) AS method,
            coalesce(u.business_date, e.business_date)::text AS day,
            coalesce(u.amount, 0)::text AS counted_amount, coalesce(e.amount, 0)::text AS expected_amount,
            coalesce(u.count, 0)::text AS counted, coalesce(e.count, 0)::text AS expected
       FROM (SELECT * FROM limit_usage WHERE tenant_id = $1 AND mode = $2) u
       FULL JOIN expected e ON e.kind = u.subject_kind AND e.subject_id = u.subject_id AND e.method = u.method AND e.business_date = u.business_date
      WHERE coalesce(u.amount, 0) <> coalesce(e.amount, 0) OR coalesce(u.count, 0) <> coalesce(e.count, 0)`,
    [t, mode],
  );
  if (usage.length) fail('limit usage counters that differ from the payouts that consumed them', usage);

  // --- outbox events -------------------------------------------------------------------------------
  const events = await rows(
    pool,
    `SELECT id::text AS id, aggregate_id, event_type, status, attempts FROM outbox_events WHERE tenant_id = $1`,
    [t],
  );
  const eventsOf = new Map<string, typeof events>();
  for (const e of events) eventsOf.set(e.aggregate_id, [...(eventsOf.get(e.aggregate_id) ?? []), e]);
  const wrongEvents: unknown[] = [];
  for (const p of payments) {
    const types = (eventsOf.get(p.id) ?? [])
      .map((e) => e.event_type)
      .sort()
      .join(',');
    const want =
      p.status === 'settled'
        ? 'payment.settled'
        : p.status === 'failed'
          ? 'payment.failed'
          : p.status === 'reversed'
            ? 'payment.reversed,payment.settled'
            : '(none yet)';
    if (types !== want) wrongEvents.push({ payment: p.id, status: p.status, events: types, want });
  }
  for (const [aggregate, list] of eventsOf)
    if (!byId.has(aggregate)) wrongEvents.push({ event_for_unknown_payment: aggregate, events: list });
  if (wrongEvents.length) fail('payments without exactly their outcome events', wrongEvents);
  const unpublished = events.filter((e) => e.status !== 'published');
  if (unpublished.length && input.published !== false) fail('events not published', unpublished);
  if (input.receiver) {
    const received = new Set(input.receiver.eventIds());
    const missing = events.filter((e) => !received.has(e.id));
    if (missing.length) fail('events the receiver never got', missing);
    if (tenant.webhookSecret) {
      const forged = input.receiver.requests
        .map((r) => ({
          r,
          check: verifyWebhook({ secret: tenant.webhookSecret!, headers: r.headers, rawBody: r.rawBody }),
        }))
        .filter(({ check }) => !check.ok)
        .map(({ r, check }) => ({ event: r.headers['x-event-id'], attempt: r.headers['x-delivery-attempt'], check }));
      if (forged.length) fail('deliveries whose signature does not verify with the endpoint secret', forged);
    }
  }

  // --- the rail's view ---------------------------------------------------------------------------------
  if (input.sandboxRail !== false) violations.push(...(await sandboxRailViolations(pool, t, payments)));
  // No rail contradicted itself on its own in these runs: an anomaly here is a report applied out of order.
  const anomalies = await rows(
    pool,
    `SELECT kind, payment_id, theirs FROM anomalies WHERE tenant_id = $1 OR tenant_id IS NULL`,
    [t],
  );
  if (anomalies.length) fail('anomalies recorded although the rail never contradicted our records', anomalies);

  return violations;
}

/** The sandbox rail's view: one transfer per charged payment, sent once, every reversal acknowledged. */
async function sandboxRailViolations(pool: pg.Pool, t: string, payments: any[]): Promise<string[]> {
  const violations: string[] = [];
  const fail = (what: string, offending: unknown) => violations.push(`${what}: ${show(offending)}`);
  const transfers = await rows(
    pool,
    `SELECT s.reference, s.submissions, s.scenario, s.reverse_at, s.reversal_acknowledged_at, p.status AS payment_status, p.funding_account
       FROM sandbox_rail_transfers s LEFT JOIN payments p ON p.tenant_id = s.tenant_id AND p.id = s.reference
      WHERE s.tenant_id = $1`,
    [t],
  );
  const resubmitted = transfers.filter((s) => s.submissions !== 1);
  if (resubmitted.length) fail('transfers the rail was asked to send more than once', resubmitted);
  const strays = transfers.filter((s) => s.payment_status === null || s.funding_account === null);
  if (strays.length) fail('transfers at the rail for no payment, or for a payment that failed before the rail', strays);
  const sent = new Set(transfers.map((s) => s.reference as string));
  const unsent = payments.filter((p) => p.funding_account !== null && !sent.has(p.id));
  if (unsent.length) fail('charged payments the rail never received', unsent);
  const unacknowledged = transfers.filter((s) => s.reverse_at !== null && s.reversal_acknowledged_at === null);
  if (unacknowledged.length) fail('reversal notifications never acknowledged', unacknowledged);
  return violations;
}

/** A compact account of a run for failure messages and logs. */
function runSummary(client: ChaosClient, records: KeyRecord[] = [...client.records.values()]): string {
  const latencies = records
    .filter((r) => r.finishedAt !== undefined)
    .map((r) => r.finishedAt! - r.startedAt)
    .sort((a, b) => a - b);
  const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return `${records.length} keys; per-key time p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${latencies.at(-1) ?? 0} ms; answers ${JSON.stringify(client.answerCounts())}`;
}

// ---------------------------------------------------------------------------------------------
// The end of a run, the same for every multi-process scenario

export interface FinishInput {
  name: string;
  cluster: ServiceCluster;
  pool: pg.Pool;
  tenant: Tenant;
  client: ChaosClient;
  receiver?: TestReceiver;
  /** Bound of the wait until every payment is terminal and every event published. */
  settleTimeoutMs: number;
  /** URL of a database on the same server (for pg_stat_database), and the test database's name. */
  adminUrl: string;
  dbname: string;
  /** Deadlocks counted some other way (e.g. from the server log) instead of pg_stat_database. */
  deadlocks?: () => Promise<{ count: number; detail: string }>;
  checkOutcomes?: boolean;
  sandboxRail?: boolean;
  published?: boolean;
}

export interface FinishResult {
  violations: string[];
  settled: { done: boolean; ms: number; detail: string };
  summary: string;
  artifacts?: string;
}

/**
 * Waits (bounded) until everything resolved, stops every process (SIGTERM, which must exit 0),
 * reads the deadlock count once their sessions are gone, and checks every invariant. Artifacts
 * (every process's output, the client's records) are saved when something is wrong, or always
 * with BDS_KEEP_ARTIFACTS=1.
 */
export async function finishRun(input: FinishInput): Promise<FinishResult> {
  const { cluster, pool, tenant, client } = input;
  const answered = new Set([...client.records.values()].flatMap((r) => [...r.paymentIds]));
  const settled = await waitFor(
    input.settleTimeoutMs,
    () => settlementProgress(pool, tenant.tenantId, answered.size, input.published !== false),
    100,
  );
  const stops = await cluster.stopAll();
  const violations: string[] = [];
  if (!settled.done) violations.push(`not everything resolved within ${input.settleTimeoutMs} ms: ${settled.detail}`);
  let deadlockDetail: string;
  if (input.deadlocks) {
    const d = await input.deadlocks();
    deadlockDetail = d.detail;
    if (d.count !== 0) violations.push(`deadlocks: ${d.detail}`);
  } else {
    const d = await deadlocksOf(input.adminUrl, input.dbname);
    deadlockDetail = `pg_stat_database.deadlocks = ${d.deadlocks}`;
    if (d.deadlocks !== 0)
      violations.push(`pg_stat_database.deadlocks = ${d.deadlocks} (sessions still connected when read: ${d.others})`);
  }
  violations.push(
    ...(await invariantViolations({
      pool,
      tenant,
      client,
      receiver: input.receiver,
      checkOutcomes: input.checkOutcomes,
      sandboxRail: input.sandboxRail,
      published: input.published,
    })),
  );
  const unexpected = cluster.unexpectedExits();
  if (unexpected.length) violations.push(`processes that exited on their own: ${JSON.stringify(unexpected)}`);
  const unclean = stops.filter((s) => s.code !== 0);
  if (unclean.length) violations.push(`processes that did not exit 0 on SIGTERM: ${JSON.stringify(unclean)}`);
  const transitions = await rows(
    pool,
    `SELECT actor || ':' || coalesce(reason, to_status) AS what, count(*)::int AS n FROM payment_transitions WHERE tenant_id = $1 GROUP BY 1 ORDER BY 1`,
    [tenant.tenantId],
  ).catch(() => []);
  const summary = `resolved in ${settled.ms} ms; ${deadlockDetail}; ${runSummary(client)}; transitions ${JSON.stringify(Object.fromEntries(transitions.map((r) => [r.what, r.n])))}`;
  let artifacts: string | undefined;
  if (violations.length || process.env.BDS_KEEP_ARTIFACTS) {
    artifacts = saveArtifacts(input.name, {
      ...cluster.artifactFiles(),
      'client.txt': clientDump(client),
      'violations.txt': violations.join('\n\n'),
    });
  }
  return { violations, settled, summary, artifacts };
}

/** The assertion message of a run that broke an invariant. */
export function failureReport(result: FinishResult, cluster: ServiceCluster, extra = ''): string {
  return [
    `${result.violations.length} violated invariants (${result.summary})`,
    `artifacts (every process's output, every key's answers): ${result.artifacts}`,
    ...result.violations,
    extra,
    cluster.report(30),
  ].join('\n');
}

/** The status each 201 answered, by sandbox trigger: e.g. {"V99990001": {"settled": 12, "submitted": 3}}. */
export function answeredStatusesByTrigger(client: ChaosClient): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const r of client.records.values()) {
    if (!r.final?.paymentStatus) continue;
    const trigger =
      r.spec.deliver < RAIL_FLOOR_MINOR
        ? 'below_floor'
        : r.spec.nationalId.startsWith('V9999')
          ? r.spec.nationalId
          : 'plain';
    const bucket = (out[trigger] ??= {});
    bucket[r.final.paymentStatus] = (bucket[r.final.paymentStatus] ?? 0) + 1;
  }
  return out;
}

/** Per payment, the time from its commit to its last transition (ms): p50, p99 and max. */
export async function resolutionTimes(
  pool: pg.Pool,
  tenantId: string,
): Promise<{ p50: number; p99: number; max: number; slowest: unknown[] }> {
  const list = await rows(
    pool,
    `SELECT p.id, p.status, beneficiary->>'nationalId' AS national_id,
            (extract(epoch FROM max(t.created_at) - p.created_at) * 1000)::int AS ms
       FROM payments p JOIN payment_transitions t ON t.tenant_id = p.tenant_id AND t.payment_id = p.id
      WHERE p.tenant_id = $1 GROUP BY p.tenant_id, p.id ORDER BY ms`,
    [tenantId],
  );
  const ms = list.map((r) => Number(r.ms));
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? 0;
  return { p50: at(0.5), p99: at(0.99), max: ms.at(-1) ?? 0, slowest: list.slice(-5) };
}
