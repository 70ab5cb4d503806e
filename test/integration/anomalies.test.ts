// Contradictions between the rail and our records: the sandbox rail is told to notify each one
// (POST /v1/sandbox/rail-notifications), the reaper hears it, and it is stored once as an anomaly —
// shown by the admin API, counted in the metrics — while the payment, its history, its events and the
// ledger stay exactly as they were. The rail is acknowledged only once the anomaly is stored.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import type { RailAdapter, RailLookup } from '../../src/rails/rail.ts';
import { Reaper } from '../../src/workers/reaper.ts';
import { assertEnvelope, client, ENGINE, startTestApp, type Client, type TestApp } from '../support/harness.ts';
import { metricsHeaders, valueOf } from '../support/metrics.ts';
import {
  AMPLE_RAIL_TIMEOUT_MS,
  assertLedgerBalanced,
  beneficiary,
  type FundedTenant,
  fundedTenant,
  payout,
  railLike,
} from '../support/payouts.ts';

const ENV = {
  SANDBOX_SETTLE_DELAY_MS: '3000',
  SANDBOX_REVERSE_DELAY_MS: '10000',
  SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS),
  REAPER_INTERVAL_MS: '1000',
};
const OTHER_BANK_REFERENCE = '000000000042';

describe(`anomalies on ${ENGINE}`, () => {
  let t: TestApp;
  let clock: ManualClock;
  let tenant: FundedTenant;
  let admin: Client;

  before(async () => {
    clock = new ManualClock(new Date('2026-12-01T15:00:00Z'));
    t = await startTestApp({ clock, env: ENV });
    tenant = await fundedTenant(t);
    admin = client(t.app, t.platformKey);
  });
  after(async () => {
    await t.close();
  });

  /** A reaper as the worker runs it (with the metrics), over `rails` (default: the app's). */
  function reaper(rails = t.services.rails): Reaper {
    return new Reaper(
      t.db,
      t.services.clock,
      rails,
      t.services.outcomes,
      {
        intervalMs: 1000,
        railTimeoutMs: t.config.sandboxRailTimeoutMs,
        railQueueMaxAgeMs: t.config.railQueueMaxAgeS * 1000,
      },
      undefined,
      t.services.metrics,
    );
  }

  async function reap(rails = t.services.rails, passes = 2): Promise<void> {
    const r = reaper(rails);
    for (let i = 0; i < passes; i += 1) await r.runOnce();
  }

  async function notify(body: Record<string, unknown>) {
    const response = await tenant.api.post('/v1/sandbox/rail-notifications', body);
    assert.equal(response.status, 202, response.raw);
    return response.body;
  }

  /** Everything our records say about a payment: the row, its history, its events, its ledger entries. */
  async function recordsOf(paymentId: string) {
    const q = async (sql: string) => (await t.db.query(sql, [paymentId])).rows;
    return {
      payment: await q(
        `SELECT status, status_reason, bank_reference, settled_at, fee_amount, compensated FROM payments WHERE id = $1`,
      ),
      transitions: await q(
        `SELECT from_status, to_status, reason, actor FROM payment_transitions WHERE payment_id = $1 ORDER BY seq`,
      ),
      events: await q(`SELECT event_type FROM outbox_events WHERE aggregate_id = $1 ORDER BY id`),
      entries: await q(`SELECT kind FROM ledger_transactions WHERE payment_id = $1 ORDER BY kind`),
    };
  }

  async function anomaliesOf(filter: { paymentId?: string; noticeId?: string }) {
    const { rows } = filter.paymentId
      ? await t.db.query<{ id: string; kind: string }>(`SELECT id, kind FROM anomalies WHERE payment_id = $1`, [
          filter.paymentId,
        ])
      : await t.db.query<{ id: string; kind: string }>(`SELECT id, kind FROM anomalies WHERE raw->>'id' = $1`, [
          filter.noticeId,
        ]);
    return rows;
  }

  async function pendingNotice(id: string): Promise<boolean> {
    return (await t.services.rails.test.pendingNotifications(1_000)).some((n) => n.id === id);
  }

  async function metrics(): Promise<string> {
    const response = await client(t.app).get('/metrics', metricsHeaders);
    assert.equal(response.status, 200);
    return response.raw;
  }

  const cases: Array<{
    kind: string;
    trigger: string;
    notice: (payment: { id: string }) => Record<string, unknown>;
    status: string;
  }> = [
    {
      kind: 'settled_after_failed',
      trigger: 'V99990004',
      status: 'failed',
      notice: (p) => ({ paymentId: p.id, status: 'settled' }),
    },
    {
      kind: 'failed_after_settled',
      trigger: 'V99990001',
      status: 'settled',
      notice: (p) => ({ paymentId: p.id, status: 'failed', reason: 'bank_unreachable' }),
    },
    {
      kind: 'return_of_failed',
      trigger: 'V99990004',
      status: 'failed',
      notice: (p) => ({ paymentId: p.id, status: 'reversed' }),
    },
    {
      kind: 'return_of_unresolved',
      trigger: 'V20111222',
      status: 'submitted',
      notice: (p) => ({ paymentId: p.id, status: 'reversed' }),
    },
    {
      kind: 'amount_mismatch',
      trigger: 'V99990001',
      status: 'settled',
      notice: (p) => ({ paymentId: p.id, status: 'settled', amount: 999_999 }),
    },
    {
      kind: 'bank_reference_mismatch',
      trigger: 'V99990001',
      status: 'settled',
      notice: (p) => ({ paymentId: p.id, status: 'reversed', bankReference: OTHER_BANK_REFERENCE }),
    },
  ];

  for (const c of cases) {
    it(`${c.kind}: stored once, shown by the API, our records unchanged, acknowledged`, async () => {
      const made = await payout(tenant.api, { beneficiary: beneficiary(c.trigger) });
      assert.equal(made.status, 201, made.raw);
      assert.equal(made.body.status, c.status, made.raw);
      const before = await recordsOf(made.body.id);
      const counted = valueOf(await metrics(), 'bolivar_anomalies_total', { kind: c.kind }) ?? 0;

      const notice = await notify(c.notice(made.body));
      assert.equal(notice.reference, made.body.id);
      assert.equal(await pendingNotice(notice.id), true);
      await reap();

      const found = await anomaliesOf({ paymentId: made.body.id });
      assert.deepEqual(
        found.map((a) => a.kind),
        [c.kind],
      );
      assert.deepEqual(
        await recordsOf(made.body.id),
        before,
        'the payment, its history, its events and its ledger entries are as they were',
      );
      assert.equal(await pendingNotice(notice.id), false, 'acknowledged once stored');

      const shown = await admin.get(`/v1/admin/anomalies/${found[0]!.id}`);
      assert.equal(shown.status, 200, shown.raw);
      assert.equal(shown.body.kind, c.kind);
      assert.equal(shown.body.status, 'open');
      assert.equal(shown.body.tenantId, tenant.tenantId);
      assert.equal(shown.body.mode, 'test');
      assert.equal(shown.body.paymentId, made.body.id);
      assert.equal(shown.body.ours.status, c.status);
      assert.equal(shown.body.ours.amount, made.body.amount);
      assert.equal(shown.body.theirs.status, c.notice(made.body).status);
      assert.equal((shown.body.raw as { id: string }).id, notice.id, 'the notification as it came');
      assert.equal(shown.body.reportedAt, notice.occurredAt);
      const listed = await admin.get(`/v1/admin/anomalies?kind=${c.kind}&status=open&mode=test`);
      assert.ok(
        listed.body.data.some((a: { id: string }) => a.id === found[0]!.id),
        listed.raw,
      );

      await reap();
      assert.equal((await anomaliesOf({ paymentId: made.body.id })).length, 1, 'stored once');
      assert.equal(valueOf(await metrics(), 'bolivar_anomalies_total', { kind: c.kind }), counted + 1, 'counted once');
    });
  }

  it("unknown_reference from the sandbox: the calling tenant's, in test mode, listed when test is asked for and never by default", async () => {
    const notice = await notify({ status: 'settled' });
    assert.equal(notice.paymentId, null);
    await reap();
    const [found, ...more] = await anomaliesOf({ noticeId: notice.id });
    assert.equal(more.length, 0);
    const shown = (await admin.get(`/v1/admin/anomalies/${found!.id}`)).body;
    assert.equal(shown.kind, 'unknown_reference');
    assert.deepEqual(
      [shown.tenantId, shown.mode, shown.paymentId],
      [tenant.tenantId, 'test', null],
      'the test key that asked for it owns it',
    );
    assert.equal(shown.theirs.reference, notice.reference);
    assert.equal(await pendingNotice(notice.id), false);
    assert.equal((await t.db.query(`SELECT 1 FROM payments WHERE id = $1`, [notice.reference])).rows.length, 0);
    const ids = async (query: string) =>
      (await admin.get(`/v1/admin/anomalies?status=open&limit=100${query}`)).body.data.map((a: { id: string }) => a.id);
    assert.ok(!(await ids('')).includes(found!.id), "the operators' default queue is live money");
    assert.ok(!(await ids('&mode=live')).includes(found!.id));
    assert.ok((await ids('&mode=test')).includes(found!.id));
    assert.ok((await ids('&mode=all')).includes(found!.id));
    assert.ok((await ids(`&mode=test&tenantId=${tenant.tenantId}`)).includes(found!.id));
    assert.deepEqual(
      await ids('&mode=all&tenantId=6f1c2a4e-0000-4c2b-9d3e-000000000009'),
      [],
      "another tenant's filter shows none of it",
    );
    assertEnvelope(assert, await admin.get('/v1/admin/anomalies?mode=sandbox'), 400, 'validation_failed');
  });

  it('a notification whose acknowledgement is lost is heard again and still stored once', async () => {
    const made = await payout(tenant.api, { beneficiary: beneficiary('V99990004') });
    const notice = await notify({ paymentId: made.body.id, status: 'settled' });
    const real = t.services.rails.test;
    let lost = 0;
    const forgetful: RailAdapter = railLike(real, {
      acknowledgeNotification: async (id) => {
        if (id === notice.id && lost === 0) {
          lost += 1;
          throw new Error('the acknowledgement was lost on the way');
        }
        return real.acknowledgeNotification(id);
      },
    });
    const counted = valueOf(await metrics(), 'bolivar_anomalies_total', { kind: 'settled_after_failed' }) ?? 0;
    await reap({ test: forgetful }, 1);
    assert.equal(lost, 1);
    assert.equal(await pendingNotice(notice.id), true, 'not acknowledged: handed out again');
    assert.equal(
      (await anomaliesOf({ paymentId: made.body.id })).length,
      1,
      'already stored before the acknowledgement',
    );
    await reap({ test: forgetful }, 1);
    assert.equal(await pendingNotice(notice.id), false);
    assert.equal((await anomaliesOf({ paymentId: made.body.id })).length, 1, 'stored once');
    assert.equal(valueOf(await metrics(), 'bolivar_anomalies_total', { kind: 'settled_after_failed' }), counted + 1);
  });

  it('a rail that answers every question with another amount: one anomaly, the payment left unresolved on its backoff', async () => {
    const made = await payout(tenant.api, { beneficiary: beneficiary('V20111222') });
    assert.equal(made.body.status, 'submitted');
    const real = t.services.rails.test;
    const inflate = (l: RailLookup): RailLookup =>
      l.status === 'settled' ? ({ ...l, amountMinor: 1n } as RailLookup) : l;
    const lying: RailAdapter = railLike(real, {
      lookup: async (reference, mode) => inflate(await real.lookup(reference, mode)),
      lookupMany: async (references, mode) => (await real.lookupMany!(references, mode)).map(inflate),
    });
    for (let i = 0; i < 4; i += 1) {
      clock.advance(5_000);
      await reap({ test: lying }, 1);
    }
    const found = await anomaliesOf({ paymentId: made.body.id });
    assert.deepEqual(
      found.map((a) => a.kind),
      ['amount_mismatch'],
    );
    const { rows } = await t.db.query<{ status: string; check_attempts: number; next_check_at: Date | null }>(
      `SELECT status, check_attempts, next_check_at FROM payments WHERE id = $1`,
      [made.body.id],
    );
    assert.equal(rows[0]!.status, 'submitted');
    assert.ok(rows[0]!.check_attempts >= 4, 'asked again on its backoff');
    const shown = (await admin.get(`/v1/admin/anomalies/${found[0]!.id}`)).body;
    assert.deepEqual([shown.ours.amount, shown.theirs.amount], [made.body.amount, '1']);
    assert.equal(shown.raw.via, 'reaper');
    // Told the truth again, the rail's answer resolves it as usual.
    clock.advance(60_000);
    await reap();
    assert.equal((await tenant.api.get(`/v1/payments/${made.body.id}`)).body.status, 'settled');
  });

  it('what agrees is applied, not recorded: an outcome notified for an unresolved payment, a scheduled return, a repeat', async () => {
    const open = await payout(tenant.api, { beneficiary: beneficiary('V20111222') });
    const failing = await payout(tenant.api, { beneficiary: beneficiary('V20111223') });
    const returned = await payout(tenant.api, { beneficiary: beneficiary('V99990007') });
    await notify({ paymentId: open.body.id, status: 'settled' });
    await notify({ paymentId: failing.body.id, status: 'failed', reason: 'invalid_destination_account' });
    await reap();
    const settled = await tenant.api.get(`/v1/payments/${open.body.id}`);
    assert.equal(settled.body.status, 'settled');
    assert.equal(settled.body.events.at(-1).actor, 'provider_event');
    assert.equal((await tenant.api.get(`/v1/payments/${failing.body.id}`)).body.status, 'failed');
    // The same outcome notified again, and the bank's scheduled return of V99990007, agree.
    await notify({ paymentId: open.body.id, status: 'settled' });
    clock.advance(15_000);
    await reap();
    assert.equal((await tenant.api.get(`/v1/payments/${returned.body.id}`)).body.status, 'reversed');
    for (const id of [open.body.id, failing.body.id, returned.body.id])
      assert.deepEqual(await anomaliesOf({ paymentId: id }), [], id);
    await assertLedgerBalanced(t);
  });

  it('a return notified before the settlement was heard, which the rail shows settled: applied, no anomaly', async () => {
    const made = await payout(tenant.api, { beneficiary: beneficiary('V20111224') });
    clock.advance(3_000); // settled at the rail; nobody has asked yet
    await notify({ paymentId: made.body.id, status: 'reversed' });
    // Only the notifications: its first question is not due yet.
    await reaper().runOnce();
    assert.equal((await tenant.api.get(`/v1/payments/${made.body.id}`)).body.status, 'reversed');
    assert.deepEqual(
      (await recordsOf(made.body.id)).events.map((e) => e.event_type),
      ['payment.settled', 'payment.reversed'],
    );
    assert.deepEqual(await anomaliesOf({ paymentId: made.body.id }), []);
  });

  it('the admin API: filters, pages, resolution with a note by the calling key, once', async () => {
    const me = (await admin.get('/v1/tenant/me')).body;
    const all = await admin.get('/v1/admin/anomalies?limit=100&mode=all');
    assert.equal(all.status, 200, all.raw);
    assert.ok(all.body.data.length >= 8);
    const times = all.body.data.map((a: { createdAt: string }) => a.createdAt);
    assert.deepEqual(times, [...times].sort().reverse(), 'newest first');
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { body: { data: Array<{ id: string }>; next_cursor: string | null } } = await admin.get(
        `/v1/admin/anomalies?limit=3&mode=all${cursor ? `&cursor=${cursor}` : ''}`,
      );
      paged.push(...page.body.data.map((a) => a.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    assert.deepEqual(
      paged,
      all.body.data.map((a: { id: string }) => a.id),
    );
    const kinds = (await admin.get('/v1/admin/anomalies?kind=unknown_reference&mode=all')).body.data.map(
      (a: { kind: string }) => a.kind,
    );
    assert.ok(kinds.length >= 1 && kinds.every((k: string) => k === 'unknown_reference'));

    const target = all.body.data[0];
    const openBefore = valueOf(await metrics(), 'bolivar_anomalies_open', { kind: target.kind })!;
    assertEnvelope(
      assert,
      await admin.post(`/v1/admin/anomalies/${target.id}/resolve`, { note: '   ' }),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await admin.post(`/v1/admin/anomalies/${target.id}/resolve`, { note: 'x'.repeat(2001) }),
      400,
      'validation_failed',
    );
    assertEnvelope(assert, await admin.post(`/v1/admin/anomalies/${target.id}/resolve`, {}), 400, 'validation_failed');
    assertEnvelope(
      assert,
      await tenant.api.post(`/v1/admin/anomalies/${target.id}/resolve`, { note: 'mine' }),
      403,
      'scope_missing',
    );
    assertEnvelope(assert, await tenant.api.get('/v1/admin/anomalies'), 403, 'scope_missing');
    const resolved = await admin.post(`/v1/admin/anomalies/${target.id}/resolve`, {
      note: 'Checked with the bank: the statement agrees with our ledger.',
    });
    assert.equal(resolved.status, 200, resolved.raw);
    assert.equal(resolved.body.status, 'resolved');
    assert.equal(resolved.body.resolvedBy, me.apiKeyId);
    assert.equal(resolved.body.resolutionNote, 'Checked with the bank: the statement agrees with our ledger.');
    assert.equal(resolved.body.resolvedAt, clock.now().toISOString());
    const again = await admin.post(`/v1/admin/anomalies/${target.id}/resolve`, { note: 'again' });
    assertEnvelope(assert, again, 409, 'anomaly_already_resolved');
    assert.equal(again.body.error.meta.resolved_by, me.apiKeyId);
    assert.equal(
      (await admin.get(`/v1/admin/anomalies/${target.id}`)).body.resolutionNote,
      resolved.body.resolutionNote,
      'the first note stays',
    );
    const audit = await admin.get(`/v1/admin/audit?targetType=anomaly&targetId=${target.id}`);
    assert.equal(audit.body.data.length, 1, 'one audit row for the resolution, none for the refused attempts');
    assert.equal(audit.body.data[0].action, 'anomaly.resolve');
    assert.equal(audit.body.data[0].actorKeyId, me.apiKeyId);
    assert.deepEqual(audit.body.data[0].before, { status: 'open' });
    assert.deepEqual(audit.body.data[0].after, { status: 'resolved', resolutionNote: resolved.body.resolutionNote });
    assert.ok(
      !(await admin.get('/v1/admin/anomalies?status=open&limit=100&mode=all')).body.data.some(
        (a: { id: string }) => a.id === target.id,
      ),
    );
    assert.ok(
      (await admin.get('/v1/admin/anomalies?status=resolved&mode=all')).body.data.some(
        (a: { id: string }) => a.id === target.id,
      ),
    );
    assert.equal(valueOf(await metrics(), 'bolivar_anomalies_open', { kind: target.kind }), openBefore - 1);
    assertEnvelope(
      assert,
      await admin.get('/v1/admin/anomalies/6f1c2a4e-0000-4c2b-9d3e-000000000001'),
      404,
      'resource_not_found',
    );
    assertEnvelope(assert, await admin.get('/v1/admin/anomalies?kind=nonsense'), 400, 'validation_failed');
    assertEnvelope(assert, await admin.get('/v1/admin/anomalies?cursor=nonsense'), 400, 'validation_failed');
  });

  it('the sandbox route: test keys only, the reasons of each status, bounded', async () => {
    const made = await payout(tenant.api, { beneficiary: beneficiary('V99990001') });
    assertEnvelope(
      assert,
      await tenant.api.post('/v1/sandbox/rail-notifications', {
        paymentId: made.body.id,
        status: 'settled',
        reason: 'rail_rejected',
      }),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await tenant.api.post('/v1/sandbox/rail-notifications', {
        paymentId: made.body.id,
        status: 'failed',
        bankReference: OTHER_BANK_REFERENCE,
      }),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await tenant.api.post('/v1/sandbox/rail-notifications', { status: 'settled', bankReference: '12' }),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await tenant.api.post('/v1/sandbox/rail-notifications', {
        paymentId: '6f1c2a4e-0000-4c2b-9d3e-000000000001',
        status: 'settled',
      }),
      404,
      'resource_not_found',
    );
    const other = await fundedTenant(t, 0);
    assertEnvelope(
      assert,
      await other.api.post('/v1/sandbox/rail-notifications', { paymentId: made.body.id, status: 'settled' }),
      404,
      'resource_not_found',
    );
    const queued = await notify({ paymentId: made.body.id, status: 'failed' });
    assert.deepEqual([queued.reason, queued.bankReference, queued.amount], ['rail_rejected', null, made.body.amount]);
    const live = await client(t.app, t.platformKey).post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, {
      mode: 'live',
    });
    assertEnvelope(
      assert,
      await client(t.app, live.body.key).post('/v1/sandbox/rail-notifications', { status: 'settled' }),
      404,
      'resource_not_found',
    );
    // The bound: a tenant's waiting notifications (the reaper is not running here).
    let refused;
    for (let i = 0; i < 101 && !refused; i += 1) {
      const r = await other.api.post('/v1/sandbox/rail-notifications', { status: 'settled' });
      if (r.status !== 202) refused = r;
    }
    assert.ok(refused, 'refused past the bound');
    assertEnvelope(assert, refused, 503, 'overloaded');
    await reap(t.services.rails, 3);
  });
});
