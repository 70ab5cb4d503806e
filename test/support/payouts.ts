import { foldReportRollups, reportRollupDrift } from '../../src/db/repositories/report-rollups.ts';
import assert from 'node:assert/strict';
import { buildApp } from '../../src/app.ts';
import { ledgerTotals } from './ledger.ts';
import { ManualClock } from './clock.ts';
import type { App } from '../../src/http/types.ts';
import type { RailAdapter } from '../../src/rails/rail.ts';
import type { RailsByMode } from '../../src/rails/send.ts';
import { Reaper } from '../../src/workers/reaper.ts';
import { client, createTenant, type Client, type TestApp } from './harness.ts';

/**
 * SANDBOX_RAIL_TIMEOUT_MS for a test where the rail's timeout is not what is tested. The sandbox rail
 * answers from the database, which on a loaded machine can take longer than a short timeout: the
 * send would then time out and answer `unknown` instead of the outcome the test expects. A test that
 * makes a rail call time out on purpose gives that call (or that app) a short timeout of its own.
 */
export const AMPLE_RAIL_TIMEOUT_MS = 15_000;

/**
 * Another process on `t`'s database (the app only, no loops) whose rail calls time out after
 * `railTimeoutMs`, with `testRail` as its test rail if given: it sends the payout of a test that is
 * meant to time out, beside `t`, whose ample timeout a slow answer never reaches. Close it before `t`.
 */
export async function appWithRailTimeout(
  t: TestApp,
  railTimeoutMs: number,
  deps: { clock?: ManualClock; testRail?: RailAdapter } = {},
): Promise<App> {
  const { app } = await buildApp({ config: { ...t.config, sandboxRailTimeoutMs: railTimeoutMs }, db: t.db, ...deps });
  await app.ready();
  return app;
}

export const SENDER = {
  nationalId: 'V12345678',
  firstName: 'Ana',
  lastName: 'Rojas',
  phone: '04141234567',
  email: 'ana@example.com',
};

/** An inline beneficiary whose national id picks the sandbox outcome. */
export function beneficiary(nationalId = 'V20111222', extra: Record<string, unknown> = {}) {
  return { fullName: 'María Pérez', nationalId, bankCode: '0102', phone: '04241234567', ...extra };
}

export interface FundedTenant {
  tenantId: string;
  api: Client;
  key: string;
}

/** A tenant with a test key and `amount` minor units of BS prefunding (or credit settings). */
export async function fundedTenant(
  t: TestApp,
  amount: bigint | number = 1_000_000_000n,
  tenant: Record<string, unknown> = {},
): Promise<FundedTenant> {
  const created = await createTenant(t, { tenant });
  if (BigInt(amount) > 0n) {
    const funded = await client(t.app, t.platformKey).post(
      `/v1/admin/tenants/${created.tenantId}/fundings`,
      { mode: 'test', asset: 'BS', amount: Number(amount) },
      { 'idempotency-key': `fund-${created.tenantId}` },
    );
    assert.equal(funded.status, 201, funded.raw);
  }
  return { tenantId: created.tenantId, api: created.api, key: created.key };
}

export async function quote(api: Client, deliver: number): Promise<string> {
  const response = await api.post('/v1/quotes', { deliver: { asset: 'BS', amount: deliver } });
  assert.equal(response.status, 201, response.raw);
  return response.body.id;
}

let keyCounter = 0;
export function idempotencyKey(): string {
  keyCounter += 1;
  return `test-${process.pid}-${Date.now()}-${keyCounter}`;
}

/** Quote + payout in one step; returns the HTTP response. */
export async function payout(api: Client, body: Record<string, unknown>, deliver = 1_000_000, key = idempotencyKey()) {
  const quoteId = body.quoteId ?? (await quote(api, deliver));
  return api.post(
    '/v1/payouts',
    { method: 'pago_movil', sender: SENDER, ...body, quoteId },
    { 'idempotency-key': key },
  );
}

export function reaperOf(t: TestApp, rails: RailsByMode = t.services.rails): Reaper {
  return new Reaper(t.db, t.services.clock, rails, t.services.outcomes, {
    intervalMs: t.config.reaperIntervalMs,
    railTimeoutMs: t.config.sandboxRailTimeoutMs,
    railQueueMaxAgeMs: t.config.railQueueMaxAgeS * 1000,
  });
}

/**
 * A rail that behaves as `real` except where `overrides` says otherwise (a rail that never answers a
 * submit, one that rewrites its notifications…). The sandbox rail is a class: its methods are bound
 * here, a spread would not copy them.
 */
export function railLike(real: RailAdapter, overrides: Partial<RailAdapter>): RailAdapter {
  return {
    name: real.name,
    resolvesWithinMs: real.resolvesWithinMs,
    instrumentAvailable: (b, i, r) => real.instrumentAvailable(b, i, r),
    submit: (transfer, signal) => real.submit(transfer, signal),
    lookup: (reference, mode) => real.lookup(reference, mode),
    ...(real.lookupMany
      ? { lookupMany: (references: readonly string[], mode: 'test' | 'live') => real.lookupMany!(references, mode) }
      : {}),
    pendingNotifications: (limit) => real.pendingNotifications(limit),
    acknowledgeNotification: (id) => real.acknowledgeNotification(id),
    banks: (instrument) => real.banks(instrument),
    health: (signal) => real.health(signal),
    ...overrides,
  };
}

/** Moves the clock and lets the reaper run until it has nothing left that is due. */
export async function advanceAndReap(t: TestApp, clock: ManualClock, ms: number, passes = 3): Promise<void> {
  clock.advance(ms);
  const reaper = reaperOf(t);
  for (let i = 0; i < passes; i += 1) await reaper.runOnce();
}

/** Bound of the reaper passes `reapUntil` makes, one reaper interval of the clock apart. */
const REAP_PASSES_MAX = 60;

/**
 * Advances the clock one reaper interval at a time, the reaper running after each step, until `done`:
 * for a test whose next step depends on when the reaper may act (after the payout path's send can no
 * longer be running, which the rail timeout sets), not on a clock step computed from that timeout.
 */
export async function reapUntil(
  t: TestApp,
  clock: ManualClock,
  what: string,
  done: () => Promise<boolean>,
  detail?: () => Promise<string>,
): Promise<void> {
  for (let pass = 0; pass < REAP_PASSES_MAX; pass += 1) {
    if (await done()) return;
    await advanceAndReap(t, clock, t.config.reaperIntervalMs, 1);
  }
  if (!(await done()))
    throw new Error(`${what}: not after ${REAP_PASSES_MAX} reaper passes${detail ? `\n${await detail()}` : ''}`);
}

export async function position(api: Client) {
  const response = await api.get('/v1/treasury/position');
  assert.equal(response.status, 200, response.raw);
  return response.body;
}

/** The ledger invariant: postings sum to zero per asset, and the cached balances agree. */
export async function assertLedgerBalanced(t: TestApp): Promise<void> {
  for (const row of await ledgerTotals(t.db)) {
    assert.equal(row.total, 0n, `postings in ${row.asset} sum to ${row.total}`);
    assert.equal(row.accounts_total, 0n, `account balances in ${row.asset} sum to ${row.accounts_total}`);
  }
  const { rows } = await t.db.query<{ n: bigint }>(
    `SELECT count(*)::bigint AS n FROM ledger_accounts WHERE (kind = 'prefunding' AND balance > 0) OR (kind = 'credit_receivable' AND balance < 0)`,
  );
  assert.equal(rows[0]!.n, 0n, 'no prefunding balance is negative, no credit drawn below zero');
  // The payout report's balance history: the last row of every charted account is its balance now.
  const history = await t.db.query<{
    tenant_id: string;
    mode: string;
    asset: string;
    kind: string;
    balance: bigint;
    last: bigint | null;
  }>(
    `SELECT a.tenant_id, a.mode, a.asset, a.kind, a.balance,
            (SELECT h.balance FROM ledger_balance_history h
              WHERE h.tenant_id = a.tenant_id AND h.mode = a.mode AND h.asset = a.asset AND h.kind = a.kind
              ORDER BY h.at DESC, h.id DESC LIMIT 1) AS last
       FROM ledger_accounts a WHERE a.kind IN ('prefunding', 'credit_receivable') AND a.balance_changed_at IS NOT NULL`,
  );
  for (const row of history.rows) {
    assert.equal(
      row.last,
      row.balance,
      `the balance history of ${row.tenant_id} ${row.mode} ${row.asset} ${row.kind} ends at ${row.last}, the account holds ${row.balance}`,
    );
  }
  // The payout report's rollups, folded now and with what is left unfolded, agree with the payments.
  await foldReportRollups(t.db);
  assert.deepEqual(
    await reportRollupDrift(t.db),
    [],
    'the report rollups agree with the payments and webhook attempts',
  );
}
