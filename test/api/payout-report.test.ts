import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { foldReportRollups } from '../../src/db/repositories/report-rollups.ts';
import { ManualClock } from '../support/clock.ts';
import { PLATFORM_TENANT_ID } from '../../src/services/bootstrap.ts';
import {
  assertEnvelope,
  client,
  createTenant,
  startTestApp,
  type Client,
  type InjectResult,
  type TestApp,
} from '../support/harness.ts';
import { advanceAndReap, AMPLE_RAIL_TIMEOUT_MS, beneficiary, fundedTenant, payout } from '../support/payouts.ts';
import { answer, dispatcherFor, setEndpoint, TestReceiver } from '../support/webhooks.ts';

// Every figure this file expects is computed here from what the test did (which bank each payout
// went to, when it dispatched webhooks, when it read the treasury) and from the public API (the
// statement, each payment's transitions, each event's delivery attempts, the treasury position),
// never from the report's own code.

// Settlement by the reaper two minutes after the payout; a return ten minutes after settling.
const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '120000',
  SANDBOX_REVERSE_DELAY_MS: '600000',
  SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
  REAPER_INTERVAL_MS: '1000',
};
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const STATUSES = ['created', 'pending', 'submitted', 'unknown', 'settled', 'failed', 'returned', 'reversed'] as const;
const IN_FLIGHT = new Set(['created', 'pending', 'submitted', 'unknown']);
const OUTCOMES = ['settled', 'failed', 'returned', 'reversed'] as const;

/** A calendar day `n` days after `date`. */
const addDays = (date: string, n: number) =>
  new Date(Date.parse(`${date}T00:00:00Z`) + n * DAY).toISOString().slice(0, 10);
/** 00:00 in Caracas (UTC−4 all year, no daylight saving) on `date`. */
const caracasMidnight = (date: string) => Date.parse(`${date}T04:00:00.000Z`);

// The report days are two days ahead of the real date, so the test's clock is after the moment the
// database's balance history started (its migration): an account with no history before an instant
// then had not moved yet, which the report shows as 0.
const D1 = new Date(Date.now() - 4 * HOUR + 2 * DAY).toISOString().slice(0, 10);
const D2 = addDays(D1, 1);
const D3 = addDays(D1, 2);
/** `hours`:`minutes` Caracas time on D1 (hours past 23 run into D2). */
const at = (hours: number, minutes = 0) => new Date(caracasMidnight(D1) + hours * HOUR + minutes * MINUTE);

interface Attempt {
  at: number;
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
}

interface Tracked {
  tenantId: string;
  api: Client;
  /** The bank code the test sent each payment to, by payment id. */
  bankOf: Map<string, string>;
  /** The position read after every change the test made, with the clock at the time. */
  positions: { at: number; prefunding: string; credit: string }[];
  attempts: Attempt[];
  seenAttempts: Set<string>;
}

interface Fact {
  createdAt: number;
  status: string;
  amount: bigint;
  reason: string | null;
  method: string | null;
  bankCode: string;
  outcomeMs: number | null;
}

/**
 * The documented histogram bin's last millisecond: exact below 16 ms, then eight bins per power of
 * two (a bin of 2^(e−3) ms from 2^e on).
 */
function binLast(ms: number): number {
  if (ms < 16) return ms;
  const width = 2 ** (Math.floor(Math.log2(ms)) - 3);
  return Math.floor(ms / width) * width + width - 1;
}

/** Nearest rank (the smallest value whose cumulative share is at least `percent` %), as its bin's last millisecond. */
function nearestRank(values: number[], percent: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return binLast(sorted[Math.max(1, Math.ceil((percent * sorted.length) / 100)) - 1]!);
}

const sum = (amounts: bigint[]) => amounts.reduce((a, b) => a + b, 0n).toString();

function byStatusOf(facts: Fact[]) {
  return Object.fromEntries(
    STATUSES.map((s) => [
      s,
      {
        count: facts.filter((f) => f.status === s).length,
        amount: sum(facts.filter((f) => f.status === s).map((f) => f.amount)),
      },
    ]),
  );
}

function outcomeTally(facts: Fact[]) {
  const n = (s: string) => facts.filter((f) => f.status === s).length;
  const decided = OUTCOMES.reduce((a, s) => a + n(s), 0);
  return {
    count: facts.length,
    settled: n('settled'),
    failed: n('failed'),
    returned: n('returned'),
    reversed: n('reversed'),
    inFlight: facts.filter((f) => IN_FLIGHT.has(f.status)).length,
    successRate: decided === 0 ? null : Math.round((n('settled') / decided) * 10_000) / 10_000,
  };
}

function groupBy<K>(facts: Fact[], key: (f: Fact) => K): Map<K, Fact[]> {
  const groups = new Map<K, Fact[]>();
  for (const f of facts) groups.set(key(f), [...(groups.get(key(f)) ?? []), f]);
  return groups;
}

/** A list the report orders "most first": check that, then compare in an order of the test's own. */
function canonical<T extends { count: number }>(list: T[], ordered: boolean): T[] {
  if (ordered)
    for (let i = 1; i < list.length; i += 1)
      assert.ok(list[i - 1]!.count >= list[i]!.count, `most first: ${JSON.stringify(list)}`);
  return [...list].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

describe('payout report: GET /v1/reports/payouts', () => {
  let t: TestApp;
  let clock: ManualClock;
  let admin: Client;
  let receiver: TestReceiver;
  let a: Tracked;
  let b: Tracked;
  let c: Tracked;
  const bankNames = new Map<string, string>();
  const facts = new Map<Tracked, Fact[]>();

  const track = async (tenant: { tenantId: string; api: Client }): Promise<Tracked> => ({
    ...tenant,
    bankOf: new Map(),
    positions: [],
    attempts: [],
    seenAttempts: new Set(),
  });

  /** A payout a minute after the clock's time (the clock moves to it), to a bank the test records. */
  async function pay(
    tenant: Tracked,
    nationalId: string,
    deliver: number,
    bankCode: string,
    extra: Record<string, unknown> = {},
  ): Promise<string> {
    const { beneficiary: overrides, ...rest } = extra as { beneficiary?: Record<string, unknown> };
    clock.advance(MINUTE);
    const response = await payout(
      tenant.api,
      { beneficiary: beneficiary(nationalId, { bankCode, ...overrides }), ...rest },
      deliver,
    );
    assert.equal(response.status, 201, response.raw);
    tenant.bankOf.set(response.body.id, bankCode);
    return response.body.id;
  }

  /** Reads every tenant's position now: the balance from now until the test's next change. */
  async function positions(): Promise<void> {
    for (const tenant of [a, b, c]) {
      const response = await tenant.api.get('/v1/treasury/position');
      assert.equal(response.status, 200, response.raw);
      tenant.positions.push({
        at: clock.now().getTime(),
        prefunding: response.body.prefundingBalance,
        credit: response.body.creditDrawn,
      });
    }
  }

  async function fund(tenant: Tracked, amount: number): Promise<void> {
    const response = await admin.post(
      `/v1/admin/tenants/${tenant.tenantId}/fundings`,
      { mode: 'test', asset: 'BS', amount },
      { 'idempotency-key': `fund-${tenant.tenantId}-${clock.now().getTime()}` },
    );
    assert.equal(response.status, 201, response.raw);
  }

  /** Sends every webhook due now; the attempts it made are those the events API shows that it did not before. */
  async function dispatch(): Promise<void> {
    const dispatcher = dispatcherFor(t.db, clock, { backoffScale: 0 });
    await dispatcher.dispatchDue();
    await dispatcher.close();
    for (const tenant of [a, b, c]) {
      for (const id of await eventIds(tenant.api)) {
        const event = await tenant.api.get(`/v1/events/${id}`);
        assert.equal(event.status, 200, event.raw);
        for (const d of event.body.deliveries) {
          const key = `${id}:${d.attempt}`;
          if (tenant.seenAttempts.has(key)) continue;
          tenant.seenAttempts.add(key);
          tenant.attempts.push({
            at: clock.now().getTime(),
            ok: d.ok,
            statusCode: d.status_code,
            durationMs: d.duration_ms,
          });
        }
      }
    }
  }

  before(async () => {
    clock = new ManualClock(at(9));
    t = await startTestApp({ clock, env: ENV });
    admin = client(t.app, t.platformKey);
    // A: prefunded, its endpoint accepts settlements and refuses the rest (500: rejected).
    // B: prefunded, its endpoint is a closed port (unreachable). C: daily close, no endpoint.
    a = await track(await fundedTenant(t, 1_000_000_000));
    b = await track(await fundedTenant(t, 500_000_000));
    c = await track(await fundedTenant(t, 0, { creditEnabled: true, creditLimit: 100_000_000 }));
    for (const method of ['pago_movil', 'transferencia']) {
      const banks = await a.api.get(`/v1/payouts/banks?method=${method}`);
      assert.equal(banks.status, 200, banks.raw);
      for (const bank of banks.body.data) if (!bankNames.has(bank.code)) bankNames.set(bank.code, bank.name);
    }
    receiver = await TestReceiver.start((request, response) =>
      answer(request.body.eventType === 'payment.settled' ? 200 : 500)(request, response),
    );
    await setEndpoint(t, a.tenantId, receiver.url());
    const closed = await TestReceiver.start();
    const closedUrl = closed.url();
    await closed.close();
    await setEndpoint(t, b.tenantId, closedUrl);
    await positions();

    // D1 09:05: every kind of outcome, to three banks and both instruments.
    clock.set(at(9, 4));
    await pay(a, 'V99990001', 1_000_000, '0102');
    await pay(a, 'V99990004', 2_000_000, '0105');
    await pay(a, 'V20000001', 1_500_000, '0134');
    await pay(a, 'V99990007', 3_000_000, '0102');
    await pay(a, 'V99990006', 1_200_000, '0105');
    await pay(a, 'V99990008', 1_100_000, '0102', { methodPolicy: 'strict' });
    await pay(b, 'V99990001', 2_500_000, '0102');
    await pay(b, 'V99990005', 900_000, '0134');
    await pay(c, 'V99990001', 1_300_000, '0105');
    await pay(c, 'V20000002', 1_400_000, '0105');
    await positions();
    await advanceAndReap(t, clock, 15 * MINUTE); // 09:30: the submitted ones settled or failed
    await positions();
    await advanceAndReap(t, clock, 15 * MINUTE); // 09:45: the V99990007 payout returned
    await positions();
    await dispatch();
    // The report fold's first run builds the rollups from what is there; its next one, at 11:50,
    // adds what changed since. What happens after that is not folded when the report is read: the
    // report adds it from the history.
    assert.equal((await foldReportRollups(t.db)).built, true);

    // A funding exactly at 10:00: it belongs to the 10:00 bucket, not to the 09:00 one's end.
    clock.set(at(10));
    await fund(a, 50_000_000);
    await positions();

    // D1 11:30: unconfirmed ones and a transfer, resolved at 11:45 and announced at 11:50.
    clock.set(at(11, 29));
    await pay(a, 'V99990002', 1_000_000, '0102');
    await pay(a, 'V99990003', 2_200_000, '0134');
    await pay(a, 'V20000003', 1_700_000, '0134', {
      method: 'transferencia',
      beneficiary: { accountNumber: '01340001630000000001' },
    });
    await positions();
    clock.set(at(11, 45));
    await advanceAndReap(t, clock, 0);
    await positions();
    clock.set(at(11, 50));
    await dispatch();
    const fold = await foldReportRollups(t.db);
    assert.equal(fold.built, false);
    assert.ok(fold.paymentChanges > 0 && fold.deliveries > 0, JSON.stringify(fold));

    // 23:59 on D1: created on D1, settled at 00:01 on D2, announced at 00:04.
    clock.set(at(23, 58));
    await pay(a, 'V20000004', 1_000_000, '0102');
    await positions();
    clock.set(at(24, 3));
    await advanceAndReap(t, clock, 0);
    await positions();
    clock.set(at(24, 4));
    await dispatch();

    // D2 01:00: C's daily close settles what it drew. 06:00: B is funded.
    clock.set(at(25));
    const closed1 = await admin.post(`/v1/admin/tenants/${c.tenantId}/close`, { mode: 'test' });
    assert.equal(closed1.status, 200, closed1.raw);
    await positions();
    clock.set(at(30));
    await fund(b, 10_000_000);
    await positions();

    // D2 12:10: payouts still in flight when the report is made (12:30), their events not sent.
    clock.set(at(36, 9));
    await pay(a, 'V20000005', 1_000_000, '0105');
    await pay(c, 'V99990001', 1_000_000, '0134');
    await positions();
    clock.set(at(36, 30));

    for (const tenant of [a, b, c]) facts.set(tenant, await factsOf(tenant));
  });

  after(async () => {
    await receiver?.close();
    await t?.close();
  });

  /** Each payment of a tenant as the report should see it, from the statement and the payment's transitions. */
  async function factsOf(tenant: Tracked): Promise<Fact[]> {
    const rows = await statement(tenant.api, '');
    const out: Fact[] = [];
    for (const row of rows) {
      let outcomeMs: number | null = null;
      if (row.settled_at) outcomeMs = Date.parse(row.settled_at) - Date.parse(row.created_at);
      else if (row.status === 'failed') {
        const payment = await tenant.api.get(`/v1/payments/${row.id}`);
        const failure = payment.body.events.find((e: any) => e.to_status === 'failed');
        assert.ok(failure, payment.raw);
        outcomeMs = Date.parse(failure.created_at) - Date.parse(row.created_at);
      }
      const bankCode = tenant.bankOf.get(row.id);
      assert.ok(bankCode, `the test made payment ${row.id}`);
      out.push({
        createdAt: Date.parse(row.created_at),
        status: row.status,
        amount: BigInt(row.payout_amount),
        reason: row.status_reason,
        method: row.method,
        bankCode,
        outcomeMs,
      });
    }
    assert.equal(out.length, tenant.bankOf.size, 'the statement lists every payment the test made');
    return out;
  }

  /** The prefunding balance and credit drawn of the tenants just before `instant`, summed. */
  function balanceAt(tenants: Tracked[], instant: number) {
    let prefunding = 0n;
    let credit = 0n;
    for (const tenant of tenants) {
      const last = tenant.positions.filter((p) => p.at < instant).at(-1);
      prefunding += BigInt(last?.prefunding ?? 0);
      credit += BigInt(last?.credit ?? 0);
    }
    return { asset: 'BS', prefundingBalance: prefunding.toString(), creditDrawn: credit.toString() };
  }

  /** The report the documented rules give for these tenants, from the test's own records. */
  function expectedReport(
    tenants: Tracked[],
    query: { from: string; to: string; granularity: 'hour' | 'day' },
    tenantId: string | null,
  ) {
    const start = caracasMidnight(query.from);
    const end = caracasMidnight(addDays(query.to, 1));
    const step = query.granularity === 'hour' ? HOUR : DAY;
    const now = clock.now().getTime();
    const all = tenants
      .flatMap((tenant) => facts.get(tenant)!)
      .filter((f) => f.createdAt >= start && f.createdAt < end);
    const attempts = tenants.flatMap((tenant) => tenant.attempts);
    const buckets = [];
    for (let s = start; s < end; s += step) {
      const e = s + step;
      const mine = all.filter((f) => f.createdAt >= s && f.createdAt < e);
      const timed = mine.flatMap((f) => (f.outcomeMs === null ? [] : [f.outcomeMs]));
      const tried = attempts.filter((x) => x.at >= s && x.at < e);
      const byStatus = byStatusOf(mine);
      buckets.push({
        start: new Date(s).toISOString(),
        end: new Date(e).toISOString(),
        count: mine.length,
        deliveredAmount: byStatus.settled!.amount,
        byStatus,
        timeToOutcome: { count: timed.length, p50Ms: nearestRank(timed, 50), p95Ms: nearestRank(timed, 95) },
        webhooks: {
          delivered: tried.filter((x) => x.ok).length,
          rejected: tried.filter((x) => !x.ok && x.statusCode !== null).length,
          unreachable: tried.filter((x) => x.statusCode === null).length,
          p50Ms: nearestRank(
            tried.map((x) => x.durationMs),
            50,
          ),
          p95Ms: nearestRank(
            tried.map((x) => x.durationMs),
            95,
          ),
        },
        balances: [
          s > now ? { asset: 'BS', prefundingBalance: null, creditDrawn: null } : balanceAt(tenants, Math.min(e, now)),
        ],
      });
    }
    const byStatus = byStatusOf(all);
    return {
      tenantId,
      mode: 'test',
      granularity: query.granularity,
      from: query.from,
      to: query.to,
      timeZone: 'America/Caracas',
      start: new Date(start).toISOString(),
      end: new Date(end).toISOString(),
      generatedAt: new Date(now).toISOString(),
      totals: { count: all.length, deliveredAmount: byStatus.settled!.amount, byStatus },
      buckets,
      banks: [...groupBy(all, (f) => f.bankCode)].map(([bankCode, group]) => ({
        bankCode,
        bankName: bankNames.get(bankCode) ?? null,
        ...outcomeTally(group),
      })),
      instruments: [...groupBy(all, (f) => f.method)].map(([method, group]) => ({ method, ...outcomeTally(group) })),
      failureReasons: [
        ...groupBy(
          all.filter((f) => ['failed', 'returned', 'reversed'].includes(f.status)),
          (f) => `${f.status}\t${f.reason}`,
        ),
      ].map(([, group]) => ({
        status: group[0]!.status,
        reason: group[0]!.reason,
        count: group.length,
        amount: sum(group.map((f) => f.amount)),
      })),
    };
  }

  function assertReport(response: InjectResult, expected: ReturnType<typeof expectedReport>): void {
    assert.equal(response.status, 200, response.raw);
    const { banks, instruments, failureReasons, buckets, ...rest } = response.body;
    const {
      banks: eBanks,
      instruments: eInstruments,
      failureReasons: eReasons,
      buckets: eBuckets,
      ...eRest
    } = expected;
    assert.deepStrictEqual(rest, eRest);
    assert.equal(buckets.length, eBuckets.length);
    buckets.forEach((bucket: unknown, i: number) =>
      assert.deepStrictEqual(bucket, eBuckets[i], `bucket ${i} (${eBuckets[i]!.start})`),
    );
    assert.deepStrictEqual(canonical(banks, true), canonical(eBanks, false));
    assert.deepStrictEqual(canonical(instruments, true), canonical(eInstruments, false));
    assert.deepStrictEqual(canonical(failureReasons, true), canonical(eReasons, false));
  }

  const query = (q: Record<string, string>) => `/v1/reports/payouts?${new URLSearchParams(q).toString()}`;

  it('the scenario covers what the report counts', () => {
    const mine = facts.get(a)!;
    const statuses = new Set([...facts.values()].flat().map((f) => f.status));
    for (const s of ['settled', 'failed', 'reversed', 'submitted']) assert.ok(statuses.has(s), `a ${s} payment`);
    assert.ok(new Set(mine.map((f) => f.method)).size >= 2, 'two instruments');
    const attempts = [a, b, c].flatMap((tenant) => tenant.attempts);
    assert.ok(
      attempts.some((x) => x.ok),
      'a delivered attempt',
    );
    assert.ok(
      attempts.some((x) => !x.ok && x.statusCode !== null),
      'a rejected attempt',
    );
    assert.ok(
      attempts.some((x) => x.statusCode === null),
      'an unreachable attempt',
    );
    assert.ok(
      c.positions.some((p) => p.credit !== '0'),
      'credit drawn',
    );
    assert.ok(
      mine.some((f) => f.outcomeMs !== null && f.outcomeMs > 0),
      'an outcome that took time',
    );
  });

  it("a tenant's hourly report over two Caracas days: every figure of every bucket", async () => {
    for (const tenant of [a, b, c]) {
      assertReport(
        await tenant.api.get(query({ from: D1, to: D2, granularity: 'hour' })),
        expectedReport([tenant], { from: D1, to: D2, granularity: 'hour' }, tenant.tenantId),
      );
    }
  });

  it('a daily report: Caracas days, the day under way at the report time, the day not begun without balances', async () => {
    for (const tenant of [a, b, c]) {
      const response = await tenant.api.get(query({ from: D1, to: D3 }));
      assertReport(response, expectedReport([tenant], { from: D1, to: D3, granularity: 'day' }, tenant.tenantId));
      assert.equal(response.body.granularity, 'day', 'day is the default');
      assert.deepEqual(response.body.buckets[2].balances, [
        { asset: 'BS', prefundingBalance: null, creditDrawn: null },
      ]);
    }
    // A range wholly after the report's time has no bucket begun, so no balance was read: none listed.
    const future = await a.api.get(query({ from: D3, to: D3 }));
    assert.equal(future.status, 200, future.raw);
    assert.deepEqual(
      future.body.buckets.map((bucket: any) => [bucket.count, bucket.balances]),
      [[0, []]],
    );
    // The payout of 23:59 on D1 is D1's, though it settled on D2.
    const days = (await a.api.get(query({ from: D1, to: D2, granularity: 'day' }))).body.buckets;
    assert.equal(days[0].end, new Date(caracasMidnight(D2)).toISOString());
    assert.equal(days[0].count, facts.get(a)!.filter((f) => f.createdAt < caracasMidnight(D2)).length);
  });

  it("the tenant's key may name its own tenant and mode", async () => {
    const own = await a.api.get(query({ from: D1, to: D2, granularity: 'hour', tenantId: a.tenantId, mode: 'test' }));
    assertReport(own, expectedReport([a], { from: D1, to: D2, granularity: 'hour' }, a.tenantId));
  });

  it("the platform key: one tenant's report is the tenant's own; without tenantId, every tenant summed", async () => {
    for (const granularity of ['hour', 'day']) {
      const q = { from: D1, to: D2, granularity };
      const own = await a.api.get(query(q));
      const platform = await admin.get(query({ ...q, tenantId: a.tenantId, mode: 'test' }));
      assert.equal(platform.status, 200, platform.raw);
      assert.deepStrictEqual(platform.body, own.body);
      const everyone = await admin.get(query({ ...q, mode: 'test' }));
      assertReport(
        everyone,
        expectedReport([a, b, c], q as { from: string; to: string; granularity: 'hour' | 'day' }, null),
      );
    }
    // The sum, checked as a sum of the tenants' own reports too.
    const q = { from: D1, to: D2, granularity: 'hour' };
    const [ra, rb, rc, all] = await Promise.all([
      a.api.get(query(q)),
      b.api.get(query(q)),
      c.api.get(query(q)),
      admin.get(query({ ...q, mode: 'test' })),
    ]);
    all.body.buckets.forEach((bucket: any, i: number) => {
      const parts = [ra, rb, rc].map((r) => r.body.buckets[i]);
      assert.equal(
        bucket.count,
        parts.reduce((n, p) => n + p.count, 0),
      );
      assert.equal(bucket.deliveredAmount, sum(parts.map((p) => BigInt(p.deliveredAmount))));
      for (const s of STATUSES)
        assert.equal(bucket.byStatus[s].amount, sum(parts.map((p) => BigInt(p.byStatus[s].amount))));
      for (const k of ['delivered', 'rejected', 'unreachable'])
        assert.equal(
          bucket.webhooks[k],
          parts.reduce((n, p) => n + p.webhooks[k], 0),
        );
      if (bucket.balances[0].prefundingBalance !== null) {
        assert.equal(
          bucket.balances[0].prefundingBalance,
          sum(parts.map((p) => BigInt(p.balances[0].prefundingBalance))),
        );
        assert.equal(bucket.balances[0].creditDrawn, sum(parts.map((p) => BigInt(p.balances[0].creditDrawn))));
      }
    });
    // Live mode has nothing: every bucket listed, all zero.
    const live = await admin.get(query({ ...q, mode: 'live' }));
    assert.equal(live.status, 200, live.raw);
    assert.equal(live.body.totals.count, 0);
    assert.equal(live.body.buckets.length, 48);
  });

  // The tests above read the rollups plus the changes made after the last fold. The same figures
  // must come out once everything is folded, from the payments themselves before the first build
  // (a new or rebuilding database), and after a rebuild.
  it('the same figures once all is folded, before the rollups are built, and after a rebuild', async () => {
    const every = async (state: string) => {
      for (const granularity of ['hour', 'day'] as const) {
        const q = { from: D1, to: D2, granularity };
        for (const tenant of [a, b, c])
          assertReport(await tenant.api.get(query(q)), expectedReport([tenant], q, tenant.tenantId));
        const everyone = await admin.get(query({ ...q, mode: 'test' }));
        assert.equal(everyone.status, 200, `${state}: ${everyone.raw}`);
        assertReport(everyone, expectedReport([a, b, c], q, null));
      }
    };
    const fold = await foldReportRollups(t.db);
    assert.ok(fold.paymentChanges > 0, 'the payouts after the last fold were folded now');
    await every('all folded');
    assert.equal((await foldReportRollups(t.db)).paymentChanges, 0, 'nothing left to fold');
    await t.db.query('UPDATE report_fold SET folded = NULL');
    await every('not built');
    assert.equal((await foldReportRollups(t.db)).built, true);
    await every('rebuilt');
  });

  it('an invalid request is 400 validation_failed naming the field; an unknown tenant 404', async () => {
    const fields = (response: InjectResult, field: string) => {
      assertEnvelope(assert, response, 400, 'validation_failed');
      assert.deepEqual(
        response.body.error.meta.errors.map((e: { field: string }) => e.field),
        [field],
        response.raw,
      );
    };
    fields(await a.api.get(query({ from: D2, to: D1 })), 'from');
    fields(await a.api.get(query({ from: '2026-03-01', to: '2026-04-01', granularity: 'hour' })), 'to');
    assert.equal(
      (await a.api.get(query({ from: '2026-03-01', to: '2026-03-31', granularity: 'hour' }))).status,
      200,
      '31 days by hour',
    );
    fields(await a.api.get(query({ from: '2026-01-01', to: '2027-01-02' })), 'to');
    assert.equal((await a.api.get(query({ from: '2026-01-01', to: '2027-01-01' }))).status, 200, '366 days by day');
    fields(await a.api.get(query({ from: '2026-02-30', to: '2026-03-01' })), 'from');
    fields(await a.api.get(query({ from: '2026-03-01', to: 'tomorrow' })), 'to');
    fields(await a.api.get(query({ from: D1 })), 'to');
    fields(await a.api.get(query({ from: D1, to: D2, granularity: 'week' })), 'granularity');
    fields(await admin.get(query({ from: D1, to: D2 })), 'mode');
    fields(await admin.get(query({ from: D1, to: D2, tenantId: a.tenantId })), 'mode');
    fields(await admin.get(query({ from: D1, to: D2, mode: 'test', tenantId: 'not-a-uuid' })), 'tenantId');
    fields(await a.api.get(query({ from: D1, to: D2, tenantId: b.tenantId })), 'tenantId');
    fields(await a.api.get(query({ from: D1, to: D2, mode: 'live' })), 'mode');
    // A tenant the platform key names must be a customer tenant: not an all-zero report for a typo.
    for (const tenantId of ['3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f', PLATFORM_TENANT_ID]) {
      assertEnvelope(
        assert,
        await admin.get(query({ from: D1, to: D2, mode: 'test', tenantId })),
        404,
        'resource_not_found',
      );
    }
    const writer = await createTenant(t, { scopes: ['payments:write'] });
    assertEnvelope(assert, await writer.api.get(query({ from: D1, to: D2 })), 403, 'scope_missing');
  });

  it("a bucket's payments are the statement's with createdFrom = its start and createdBefore = its end", async () => {
    const report = (await a.api.get(query({ from: D1, to: D2, granularity: 'hour' }))).body;
    let checked = 0;
    for (const bucket of report.buckets) {
      if (bucket.count === 0) continue;
      const window = `createdFrom=${encodeURIComponent(bucket.start)}&createdBefore=${encodeURIComponent(bucket.end)}`;
      const rows = await statement(a.api, window);
      assert.equal(rows.length, bucket.count, bucket.start);
      for (const s of STATUSES) {
        const inStatus = await statement(a.api, `${window}&status=${s}`);
        assert.equal(inStatus.length, bucket.byStatus[s].count, `${bucket.start} ${s}`);
        assert.equal(sum(inStatus.map((r) => BigInt(r.payout_amount))), bucket.byStatus[s].amount);
      }
      const csv = await a.api.get(`/v1/payments/export?${window}`);
      assert.equal(csv.status, 200, csv.raw);
      const lines = csv.raw.split('\r\n').filter((line) => line !== '');
      assert.ok(lines[0]!.startsWith('id,'));
      assert.deepEqual(
        lines
          .slice(1)
          .map((line) => line.slice(0, 36))
          .sort(),
        rows.map((r) => r.id).sort(),
      );
      checked += 1;
    }
    assert.ok(checked >= 4, `${checked} buckets with payments`);
    // The same instant written with Caracas' offset is the same filter.
    const first = report.buckets.find((bucket: any) => bucket.count > 0);
    const local = (iso: string) => new Date(Date.parse(iso) - 4 * HOUR).toISOString().replace('Z', '-04:00');
    const offset = await statement(
      a.api,
      `createdFrom=${encodeURIComponent(local(first.start))}&createdBefore=${encodeURIComponent(local(first.end))}`,
    );
    assert.equal(offset.length, first.count);
  });

  it('createdFrom at or after createdBefore, or not an instant the database holds, is 400 validation_failed', async () => {
    const start = encodeURIComponent(at(9).toISOString());
    for (const url of [
      `/v1/payments?createdFrom=${start}&createdBefore=${start}`,
      `/v1/payments/export?createdFrom=${encodeURIComponent(at(10).toISOString())}&createdBefore=${start}`,
    ]) {
      const response = await a.api.get(url);
      assertEnvelope(assert, response, 400, 'validation_failed');
      assert.deepEqual(
        response.body.error.meta.errors.map((e: { field: string }) => e.field),
        ['createdFrom'],
        response.raw,
      );
    }
    // Beyond the format: a leap second, year 0000 and a year past 9999 once the offset applies.
    const invalid = [
      ['createdFrom', 'yesterday'],
      ['createdBefore', D1],
      ['createdFrom', '2026-02-30T00:00:00Z'],
      ['createdFrom', '2026-06-30T23:59:60Z'],
      ['createdBefore', '2016-12-31T23:59:60Z'],
      ['createdFrom', '0000-01-01T00:00:00Z'],
      ['createdBefore', '9999-12-31T23:59:59-23:59'],
    ];
    for (const [field, value] of invalid) {
      for (const path of ['/v1/payments', '/v1/payments/export']) {
        const response = await a.api.get(`${path}?${field}=${encodeURIComponent(value!)}`);
        assertEnvelope(assert, response, 400, 'validation_failed');
        assert.deepEqual(
          response.body.error.meta.errors.map((e: { field: string }) => e.field),
          [field],
          response.raw,
        );
      }
    }
    // The bounds themselves are accepted.
    const bounds = await statement(
      a.api,
      `createdFrom=${encodeURIComponent('1970-01-01T00:00:00Z')}&createdBefore=${encodeURIComponent('9999-12-30T00:00:00Z')}`,
    );
    assert.equal(bounds.length, facts.get(a)!.length);
  });
});

/** The event ids of a tenant, every page. */
async function eventIds(api: Client): Promise<string[]> {
  const ids: string[] = [];
  let url = '/v1/events?limit=100';
  for (let pages = 0; pages < 100; pages += 1) {
    const page = await api.get(url);
    assert.equal(page.status, 200, page.raw);
    ids.push(...page.body.data.map((e: { id: string }) => e.id));
    if (!page.body.has_more) return ids;
    url = `/v1/events?limit=100&cursor=${page.body.next_cursor}`;
  }
  throw new Error('the event list did not end');
}

/** Every row of a filtered statement, page by page. */
async function statement(api: Client, filter: string): Promise<any[]> {
  const rows: any[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages += 1) {
    const page: InjectResult = await api.get(
      `/v1/payments?${filter}${filter ? '&' : ''}limit=100${cursor ? `&cursor=${cursor}` : ''}`,
    );
    assert.equal(page.status, 200, page.raw);
    rows.push(...page.body.data);
    cursor = page.body.next_cursor;
    if (!cursor) return rows;
  }
  throw new Error('the statement did not end');
}
