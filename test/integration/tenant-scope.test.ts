// The path to Citus (docs/scaling.md) stays open: every statement of every money transaction names its
// one tenant for each tenant-owned table it touches, so on a cluster distributed by tenant_id it is
// routed to one shard, and the transaction to one node. The money paths run here as the suite runs
// them — payouts of every sandbox outcome, a payout batch, simulated outcomes, the reaper, an operator's
// recheck, fundings, the sandbox tenant's first funding, the admin and the scheduled daily close — with every statement
// recorded at the service's database layer (statement-log.ts) and parsed by PostgreSQL's own parser
// (tenant-scope.ts). Runs on either engine (PGlite, or PostgreSQL with DATABASE_URL).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { bootstrapIfEmpty, PLATFORM_TENANT_ID } from '../../src/services/bootstrap.ts';
import { DailyCloseWorker } from '../../src/workers/daily-close.ts';
import { bootstrapSteps } from '../../src/workers/index.ts';
import {
  client,
  createTestDatabase,
  startTestApp,
  type Client,
  type TestApp,
  type TestDatabase,
} from '../support/harness.ts';
import {
  advanceAndReap,
  assertLedgerBalanced,
  beneficiary,
  fundedTenant,
  idempotencyKey,
  payout,
  SENDER,
} from '../support/payouts.ts';
import { statementLog, type LoggedStatement, type StatementLog } from '../support/statement-log.ts';
import {
  checkStatement,
  isMoneyTransaction,
  loadParser,
  TABLE_PLACEMENT,
  TENANT_OWNED,
  type ScopeFinding,
} from '../support/tenant-scope.ts';

const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '3000',
  SANDBOX_REVERSE_DELAY_MS: '10000',
  SANDBOX_RAIL_TIMEOUT_MS: '300',
  REAPER_INTERVAL_MS: '1000',
};
/** Every sandbox trigger (docs/sandbox.md) and an ordinary id: each outcome's path runs at least once. */
const SANDBOX_IDS = [
  'V99990001',
  'V99990002',
  'V99990003',
  'V99990004',
  'V99990005',
  'V99990006',
  'V99990007',
  'V99990008',
  'V99990009',
  'V20111222',
];

interface Checked {
  statement: LoggedStatement;
  finding: ScopeFinding;
}

/** Each transaction's statements, checked, by transaction number. */
function transactionsOf(log: StatementLog): Map<number, Checked[]> {
  const transactions = new Map<number, Checked[]>();
  for (const statement of log.statements) {
    if (statement.transaction === null) continue;
    const list = transactions.get(statement.transaction) ?? [];
    list.push({ statement, finding: checkStatement(statement.sql) });
    transactions.set(statement.transaction, list);
  }
  return transactions;
}

/**
 * Tenants a money transaction may bind besides its own, each with its reason. A funding is an
 * operator's: its Idempotency-Key is the platform key's, kept under the platform tenant (keys are
 * scoped by the caller), while its entry posts to the funded tenant's ledger. On Citus that transaction
 * spans the platform tenant's shard and the funded tenant's (a two-phase commit when they sit on two
 * nodes), at the rate operators fund. Making it single-tenant means keeping an admin's keys under the
 * tenant they act on, which changes what a reused key means (today one key cannot fund two tenants).
 */
const ALLOWED_SECOND_TENANT = [{ table: 'idempotency_keys', tenant: PLATFORM_TENANT_ID }];

/** The tenants a statement binds, its `$n` read from its parameters, and whether the allow-list covers each. */
function tenantsOf({ statement, finding }: Checked): Array<{ tenant: string; allowed: boolean }> {
  return finding.bindings.map(({ table, value }) => {
    const tenant = value.startsWith('$')
      ? String(statement.params[Number(value.slice(1)) - 1])
      : value.replace(/^'|'$/g, '');
    return { tenant, allowed: ALLOWED_SECOND_TENANT.some((a) => a.table === table && a.tenant === tenant) };
  });
}

const oneLine = (sql: string) => sql.replace(/\s+/g, ' ').trim();

async function simulate(api: Client, paymentId: string, outcome: string): Promise<void> {
  const answer = await api.post(`/v1/sandbox/payments/${paymentId}/simulate`, { outcome });
  assert.equal(answer.status, 200, answer.raw);
}

/** The sandbox tenant's first start (its first funding), then a prefunded tenant's payouts of every outcome. */
async function prefundedPaths(t: TestApp, clock: ManualClock): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bds-tenant-scope-'));
  try {
    const boot = await bootstrapIfEmpty(
      t.db,
      { dataDir, platformApiKey: t.platformKey, publicBaseUrl: 'http://127.0.0.1:9', port: 0 },
      bootstrapSteps(t.config),
    );
    assert.ok(boot, 'the sandbox tenant is created, with its first funding');
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  const tenant = await fundedTenant(t);
  const admin = client(t.app, t.platformKey);
  const fund = (amount: number, key: string) =>
    admin.post(
      `/v1/admin/tenants/${tenant.tenantId}/fundings`,
      { mode: 'test', asset: 'BS', amount },
      { 'idempotency-key': key },
    );
  assert.equal((await fund(1_000_000_000, `fund-${tenant.tenantId}`)).status, 201, 'a replay of the first funding');
  assert.equal((await fund(5_000_000, idempotencyKey())).status, 201, 'a second funding');
  for (const nationalId of SANDBOX_IDS) {
    const extra = nationalId === 'V99990008' ? { accountNumber: '01020000000000000008' } : {};
    const made = await payout(tenant.api, { beneficiary: beneficiary(nationalId, extra) });
    assert.equal(made.status, 201, made.raw);
    // An operator puts an unresolved payment back on the reaper's schedule, naming the payment only.
    if (made.body.status === 'unknown')
      assert.equal((await admin.post(`/v1/admin/payments/${made.body.id}/recheck`)).status, 200);
  }
  const items = ['V20111222', 'V99990005', 'V99990006'].map((nationalId, i) => ({
    reference: `scope-${i}`,
    deliver: { asset: 'BS', amount: 1_000_000 },
    method: 'pago_movil',
    beneficiary: beneficiary(nationalId),
    sender: SENDER,
  }));
  const batch = await tenant.api.post('/v1/payout-batches', { items }, { 'idempotency-key': idempotencyKey() });
  assert.equal(batch.status, 201, batch.raw);
  const settleNow = await payout(tenant.api, { beneficiary: beneficiary('V20111223') });
  await simulate(tenant.api, settleNow.body.id, 'settle');
  await simulate(tenant.api, settleNow.body.id, 'reverse');
  await advanceAndReap(t, clock, 4000);
  await advanceAndReap(t, clock, 11_000);
}

/** A credit tenant draws, is closed by the admin API, draws again and is closed by the scheduled close. */
async function creditPaths(t: TestApp, clock: ManualClock): Promise<void> {
  const tenant = await fundedTenant(t, 0n, { creditEnabled: true, creditLimit: 50_000_000 });
  for (const nationalId of ['V99990001', 'V99990006', 'V99990007'])
    await payout(tenant.api, { beneficiary: beneficiary(nationalId) });
  const closed = await client(t.app, t.platformKey).post(`/v1/admin/tenants/${tenant.tenantId}/close`, {
    mode: 'test',
  });
  assert.equal(closed.status, 200, closed.raw);
  await advanceAndReap(t, clock, 4000);
  await payout(tenant.api, { beneficiary: beneficiary('V99990001') });
  clock.advance(24 * 3600 * 1000);
  await new DailyCloseWorker(t.services.treasury, t.app.log).runOnce();
  await advanceAndReap(t, clock, 11_000);
}

describe('tenant scope: every money transaction is single-tenant (the path to Citus)', () => {
  let t: TestApp;
  let database: TestDatabase;
  let log: StatementLog;
  let transactions: Map<number, Checked[]>;
  before(async () => {
    await loadParser();
    const clock = new ManualClock(new Date('2026-11-23T15:00:00Z'));
    database = await createTestDatabase();
    log = statementLog(database.db);
    t = await startTestApp({ clock, env: ENV, database: { db: log.db, drop: () => database.drop() } });
    await prefundedPaths(t, clock);
    await creditPaths(t, clock);
    await assertLedgerBalanced(t);
    transactions = transactionsOf(log);
  });
  after(async () => {
    await t.close();
    await database.drop();
  });

  it('every table of the schema is placed: distributed by tenant_id (NOT NULL), a reference table, or on the coordinator', async () => {
    const { rows } = await t.db.query<{ table_name: string; tenant: string | null }>(
      `SELECT t.table_name, (SELECT c.is_nullable FROM information_schema.columns c
                              WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name AND c.column_name = 'tenant_id') AS tenant
         FROM information_schema.tables t WHERE t.table_schema = 'public' AND t.table_type = 'BASE TABLE' ORDER BY 1`,
    );
    const unplaced = rows
      .filter((r) => !TENANT_OWNED.has(r.table_name) && !(r.table_name in TABLE_PLACEMENT))
      .map((r) => r.table_name);
    assert.deepEqual(
      unplaced,
      [],
      'a new table needs its place on Citus: TENANT_OWNED or TABLE_PLACEMENT in test/support/tenant-scope.ts, and docs/scaling.md',
    );
    const notNullTenant = new Set(rows.filter((r) => r.tenant === 'NO').map((r) => r.table_name));
    assert.deepEqual(
      [...TENANT_OWNED].filter((table) => !notNullTenant.has(table)),
      [],
      'a distributed table has tenant_id NOT NULL',
    );
    const known = new Set(rows.map((r) => r.table_name));
    assert.deepEqual(
      [...TENANT_OWNED, ...Object.keys(TABLE_PLACEMENT)].filter((table) => !known.has(table)),
      [],
      'no table is placed that the schema lacks',
    );
  });

  it('the money paths ran: every money table was written by a money transaction', () => {
    const money = [...transactions.values()].filter((list) => isMoneyTransaction(list.map((c) => c.finding)));
    const written = new Set(money.flatMap((list) => list.flatMap((c) => c.finding.writes)));
    for (const table of [
      'ledger_accounts',
      'ledger_transactions',
      'ledger_postings',
      'payments',
      'payment_transitions',
      'limit_usage',
      'daily_closes',
    ]) {
      assert.ok(written.has(table), `no money transaction wrote ${table}: a money path did not run`);
    }
    assert.ok(money.length >= 20, `only ${money.length} money transactions ran`);
  });

  it('no statement of a money transaction touches a tenant-owned table without binding its tenant_id', () => {
    const violations: string[] = [];
    for (const [id, list] of transactions) {
      if (!isMoneyTransaction(list.map((c) => c.finding))) continue;
      for (const { statement, finding } of list) {
        for (const violation of finding.violations)
          violations.push(`transaction ${id}: ${violation}\n    ${oneLine(statement.sql).slice(0, 400)}`);
      }
    }
    assert.deepEqual(violations, [], `statements that Citus could not route to one shard:\n${violations.join('\n')}`);
  });

  it('every money transaction binds one tenant, the same in all its statements (but for ALLOWED_SECOND_TENANT)', () => {
    const mixed: string[] = [];
    let allowedSeen = 0;
    for (const [id, list] of transactions) {
      if (!isMoneyTransaction(list.map((c) => c.finding))) continue;
      const bound = list.flatMap(tenantsOf);
      allowedSeen += bound.filter((b) => b.allowed).length;
      const tenants = new Set(bound.filter((b) => !b.allowed).map((b) => b.tenant));
      if (tenants.size !== 1) mixed.push(`transaction ${id} binds ${tenants.size} tenants: ${[...tenants].join(', ')}`);
    }
    assert.deepEqual(mixed, []);
    assert.ok(allowedSeen > 0, 'ALLOWED_SECOND_TENANT lists a binding no money transaction makes any more: drop it');
  });
});
