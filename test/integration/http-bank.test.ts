// The HTTP bank connector against the reference gateway simulator, a real separate process: the
// connector's promises (idempotent submit, lookups single and bulk, catalogue, health), every fault the
// simulator can be switched to, the signed callbacks route, and a live tenant paying end to end.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { acknowledgeRailInboxEvent, insertRailInboxEvent } from '../../src/db/repositories/rail-inbox.ts';
import { countRailInboxEvents } from '../support/rail-inbox.ts';
import { RAIL_INBOX_RETENTION_MS, RailInboxPurge } from '../../src/workers/rail-inbox-purge.ts';
import { signRailMessage } from '../../src/domain/rail-signature.ts';
import { LocalBankCatalogue } from '../../src/rails/catalogue.ts';
import { RailNotReceivedError, type RailAdapter, type RailTransfer } from '../../src/rails/rail.ts';
import { callRail } from '../../src/rails/send.ts';
import {
  callbacksSettled,
  connectorConfigOf,
  httpBankUnderTest,
  serviceWithGateway,
  simulatorBank,
  startGatewaySimulator,
  TEST_CALLBACK_KEY,
  TEST_REQUEST_KEYS,
  type GatewaySimulator,
} from '../support/gateway-simulator.ts';
import { HttpBankRail } from '../../src/rails/http-bank/adapter.ts';
import { systemClock } from '../../src/domain/clock.ts';
import { RAIL_FAILURE_REASONS } from '../../src/domain/failure-reasons.ts';
import { assertEnvelope, client, createTenant, type TestApp } from '../support/harness.ts';
import {
  assertLedgerBalanced,
  beneficiary,
  idempotencyKey as newKey,
  payout,
  reaperOf,
  SENDER,
} from '../support/payouts.ts';
import { until } from '../support/until.ts';
import { metricsHeaders, valueOf } from '../support/metrics.ts';

const RAIL = 'bank-sim';
/** The payout path's rail timeout in these tests: the hang and slow faults outlast it. */
const RAIL_TIMEOUT_MS = 1000;

describe('HTTP bank connector against the gateway simulator', () => {
  let sim: GatewaySimulator;
  let t: TestApp;
  let rail: RailAdapter;

  before(async () => {
    sim = await startGatewaySimulator({ settleDelayMs: 100 });
    ({ t } = await serviceWithGateway(sim, { env: { SANDBOX_RAIL_TIMEOUT_MS: String(RAIL_TIMEOUT_MS) } }));
    rail = t.services.connectors[0]!;
  });

  after(async () => {
    // The gateway first: a callback in flight would hold the app's close for a keep-alive (75 s).
    await sim?.close();
    await t?.close();
  });

  function transfer(overrides: Partial<RailTransfer> = {}): RailTransfer {
    return {
      reference: randomUUID(),
      tenantId: randomUUID(),
      mode: 'live',
      instrument: 'pago_movil',
      amountMinor: 150_000n,
      asset: 'BS',
      beneficiary: {
        fullName: 'María Pérez',
        nationalId: 'V20111222',
        bankCode: '0102',
        accountNumber: null,
        phone: '04241234567',
      },
      sender: { ...SENDER, nationality: 'VE' },
      ...overrides,
    };
  }

  const submissionsOf = (reference: string) => simulatorBank(sim).submissionsOf(reference);
  const counters = async () =>
    (await sim.control('GET', '/_control/state')).callbacks.counters as {
      delivered: number;
      refused: number;
      queued: number;
    };
  const settledLookup = (reference: string) =>
    until(
      `${reference} settled at the gateway`,
      async () => (await rail.lookup(reference, 'live')).status === 'settled',
    );

  it('is the live rail; the sandbox stays the test rail', () => {
    assert.equal(t.services.rails.live?.name, RAIL);
    assert.equal(t.services.rails.test.name, 'sandbox');
  });

  it('submit is idempotent by our reference: twice is one transfer at the gateway, received twice', async () => {
    const before = (await sim.control('GET', '/_control/state')).transfers as number;
    const sent = transfer();
    assert.equal((await rail.submit(sent, AbortSignal.timeout(5000))).status, 'processing');
    await rail.submit(sent, AbortSignal.timeout(5000));
    assert.equal(await submissionsOf(sent.reference), 2);
    assert.equal((await sim.control('GET', '/_control/state')).transfers, before + 1);
    await settledLookup(sent.reference);
  });

  it('looks up singly and in bulk (past the bulk maximum, in several calls), not_found for what it never received', async () => {
    const settles = transfer();
    const fails = transfer();
    await simulatorBank(sim).arrange(settles, { kind: 'settle' });
    await simulatorBank(sim).arrange(fails, { kind: 'fail', reason: 'invalid_destination_account' });
    assert.equal((await rail.submit(settles, AbortSignal.timeout(5000))).status, 'settled');
    assert.deepEqual(await rail.submit(fails, AbortSignal.timeout(5000)), {
      status: 'failed',
      reason: 'invalid_destination_account',
      amountMinor: 150_000n,
    });
    const unknown = randomUUID();
    assert.deepEqual(await rail.lookup(unknown, 'live'), { status: 'not_found' });
    const answers = await rail.lookupMany!([settles.reference, unknown, fails.reference], 'live');
    assert.deepEqual(
      answers.map((a) => a.status),
      ['settled', 'not_found', 'failed'],
    );
    const many = [settles.reference, ...Array.from({ length: 149 }, () => randomUUID())];
    const bulk = await rail.lookupMany!(many, 'live');
    assert.equal(bulk.length, 150);
    assert.equal(bulk[0]!.status, 'settled');
    assert.ok(bulk.slice(1).every((a) => a.status === 'not_found'));
  });

  it("serves the gateway's catalogue, and fails (for the caller's fallback) when it is down", async () => {
    assert.deepEqual(await rail.banks('pago_movil'), new LocalBankCatalogue().banksOf('pago_movil'));
    await sim.control('POST', '/_control/faults', { catalogueDown: true });
    try {
      await assert.rejects(rail.banks('transferencia'), /503/);
    } finally {
      await sim.control('POST', '/_control/faults', { catalogueDown: false });
    }
    assert.deepEqual(await rail.banks('transferencia'), new LocalBankCatalogue().banksOf('transferencia'));
  });

  it('connection refused: health says so, and a submit throws RailNotReceivedError (the gateway got nothing)', async () => {
    assert.deepEqual(await rail.health(AbortSignal.timeout(5000)), { ok: true });
    await sim.control('POST', '/_control/faults', { refuse: true });
    const sent = transfer();
    try {
      const health = await rail.health(AbortSignal.timeout(5000));
      assert.equal(health.ok, false);
      await assert.rejects(
        rail.submit(sent, AbortSignal.timeout(5000)),
        (error) => error instanceof RailNotReceivedError && /ECONNREFUSED/.test(error.message),
      );
    } finally {
      await sim.control('POST', '/_control/faults', { refuse: false });
    }
    assert.equal(await submissionsOf(sent.reference), 0);
    assert.deepEqual(await rail.lookup(sent.reference, 'live'), { status: 'not_found' });
    assert.deepEqual(await rail.health(AbortSignal.timeout(5000)), { ok: true });
  });

  it('a 5xx leaves the fate unknown: an error (never a failure, never RailNotReceivedError), and the transfer it did record settles', async () => {
    const sent = transfer();
    await sim.control('POST', '/_control/faults', { error5xx: 1 });
    await assert.rejects(
      rail.submit(sent, AbortSignal.timeout(5000)),
      (error) => !(error instanceof RailNotReceivedError) && /503/.test((error as Error).message),
    );
    assert.equal(await submissionsOf(sent.reference), 1, 'received (and recorded) once; not sent again');
    await settledLookup(sent.reference);
    assert.equal(await submissionsOf(sent.reference), 1, 'a lookup never re-sends');
  });

  it('a slow answer past our timeout is a timeout (unknown), never a failure, never re-sent', async () => {
    const sent = transfer();
    await sim.control('POST', '/_control/faults', { slowMs: 3 * RAIL_TIMEOUT_MS });
    try {
      assert.deepEqual(await callRail(rail, sent, RAIL_TIMEOUT_MS), { status: 'timeout' });
    } finally {
      await sim.control('POST', '/_control/faults', { slowMs: 0 });
    }
    await settledLookup(sent.reference);
    assert.equal(await submissionsOf(sent.reference), 1);
  });

  it('a killed and restarted gateway remembers every transfer it received', async () => {
    const sent = transfer();
    await rail.submit(sent, AbortSignal.timeout(5000));
    await settledLookup(sent.reference);
    const settled = await rail.lookup(sent.reference, 'live');
    await sim.restart();
    assert.deepEqual(await rail.lookup(sent.reference, 'live'), settled);
    assert.deepEqual(
      await rail.submit(sent, AbortSignal.timeout(5000)),
      settled,
      'a resubmission answers the same transfer',
    );
    assert.equal(await submissionsOf(sent.reference), 2);
  });

  describe('callbacks (POST /v1/rails/{rail}/callbacks)', () => {
    const post = (raw: string, headers: Record<string, string>, rail = RAIL) =>
      t.app.inject({
        method: 'POST',
        url: `/v1/rails/${rail}/callbacks`,
        headers: { 'content-type': 'application/json', ...headers },
        payload: raw,
      });
    const callbackBody = (reference: string) =>
      JSON.stringify({
        eventId: `evt_${randomUUID()}`,
        occurredAt: new Date().toISOString(),
        transfer: { reference, status: 'SETTLED', bankReference: '000000000042' },
      });

    it('stores a verified callback once: a redelivery answers 200 duplicate and stores nothing more', async () => {
      const raw = callbackBody(randomUUID());
      const before = await countRailInboxEvents(t.db, RAIL);
      const first = await post(raw, signRailMessage(TEST_CALLBACK_KEY, raw, Date.now()));
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(first.json().duplicate, false);
      const again = await post(raw, signRailMessage(TEST_CALLBACK_KEY, raw, Date.now()));
      assert.equal(again.statusCode, 200);
      assert.equal(again.json().duplicate, true);
      assert.equal(await countRailInboxEvents(t.db, RAIL), before + 1);
    });

    it('takes an eventId of any printable ASCII up to 128 characters (/, #, ?, %), refuses a space, a control character or 129', async () => {
      const bodyWith = (eventId: string) =>
        JSON.stringify({
          eventId,
          occurredAt: new Date().toISOString(),
          transfer: { reference: randomUUID(), status: 'PROCESSING' },
        });
      for (const eventId of [`evt/${randomUUID()}#1?x=%20`, `${'~'.repeat(92)}${randomUUID()}`]) {
        const raw = bodyWith(eventId);
        const answer = await post(raw, signRailMessage(TEST_CALLBACK_KEY, raw, Date.now()));
        assert.equal(answer.statusCode, 200, `${eventId}: ${answer.body}`);
        assert.equal(answer.json().event_id, eventId);
      }
      for (const eventId of ['evt 1', 'evt\u00071', 'x'.repeat(129), '', 'évt']) {
        const raw = bodyWith(eventId);
        assert.equal(
          (await post(raw, signRailMessage(TEST_CALLBACK_KEY, raw, Date.now()))).statusCode,
          400,
          JSON.stringify(eventId),
        );
      }
    });

    it('a burst of 150 callbacks at once from one address: every one 200 and stored, none refused for a rate', async () => {
      const before = await countRailInboxEvents(t.db, RAIL);
      const bodies = Array.from({ length: 150 }, () => callbackBody(randomUUID()));
      const answers = await Promise.all(
        bodies.map((raw) => post(raw, signRailMessage(TEST_CALLBACK_KEY, raw, Date.now()))),
      );
      assert.deepEqual(
        [...new Set(answers.map((a) => a.statusCode))],
        [200],
        answers.find((a) => a.statusCode !== 200)?.body,
      );
      assert.equal(await countRailInboxEvents(t.db, RAIL), before + 150);
    });

    it('refuses a bad signature, a stale timestamp, an unknown key or rail with 401 and stores nothing; a signed non-callback is 400', async () => {
      const raw = callbackBody(randomUUID());
      const before = await countRailInboxEvents(t.db, RAIL);
      const signedBy = (secret: string, at = Date.now()) =>
        signRailMessage({ id: TEST_CALLBACK_KEY.id, secret }, raw, at);
      for (const headers of [
        signedBy('not-the-callback-secret-000000'),
        signRailMessage(TEST_CALLBACK_KEY, raw, Date.now() - 10 * 60_000),
        signRailMessage({ id: 'other', secret: TEST_CALLBACK_KEY.secret }, raw, Date.now()),
        {},
      ]) {
        const answer = await post(raw, headers);
        assertEnvelope(
          assert,
          { status: answer.statusCode, body: answer.json(), headers: answer.headers, raw: answer.body },
          401,
          'rail_callback_signature_invalid',
        );
      }
      const unknownRail = await post(raw, signRailMessage(TEST_CALLBACK_KEY, raw, Date.now()), 'no-such-rail');
      assert.equal(unknownRail.statusCode, 401);
      const junk = '{"hello":"world"}';
      const unreadable = await post(junk, signRailMessage(TEST_CALLBACK_KEY, junk, Date.now()));
      assert.equal(unreadable.statusCode, 400);
      assert.equal(unreadable.json().error.code, 'validation_failed');
      assert.equal(await countRailInboxEvents(t.db, RAIL), before);
      const scraped = await client(t.app).get('/metrics', metricsHeaders);
      assert.ok(
        (valueOf(scraped.raw, 'bolivar_rail_callbacks_total', { rail: RAIL, result: 'refused' }) ?? 0) >= 4,
        'counted by result',
      );
      assert.ok(
        (valueOf(scraped.raw, 'bolivar_rail_callbacks_total', { rail: 'unknown', result: 'refused' }) ?? 0) >= 1,
        'an unknown rail is one series',
      );
      assert.equal(
        valueOf(scraped.raw, 'bolivar_rail_callbacks_total', { rail: 'no-such-rail', result: 'refused' }),
        undefined,
      );
    });

    it('the inbox keeps an acknowledged event RAIL_INBOX_RETENTION_MS, an unacknowledged one until it is applied', async () => {
      const old = new Date(Date.now() - RAIL_INBOX_RETENTION_MS - 60_000);
      const rail = `purge-${randomUUID().slice(0, 8)}`;
      for (const eventId of ['applied-long-ago', 'applied-recently', 'never-applied']) {
        await insertRailInboxEvent(t.db, { rail, eventId, payload: {}, occurredAt: old, receivedAt: old });
      }
      await acknowledgeRailInboxEvent(t.db, rail, 'applied-long-ago', old);
      await acknowledgeRailInboxEvent(t.db, rail, 'applied-recently', new Date());
      assert.equal(await new RailInboxPurge(t.db, systemClock).runOnce(), false);
      const { rows } = await t.db.query<{ event_id: string }>(
        `SELECT event_id FROM rail_inbox WHERE rail = $1 ORDER BY event_id`,
        [rail],
      );
      assert.deepEqual(
        rows.map((r) => r.event_id),
        ['applied-recently', 'never-applied'],
      );
    });

    it("the gateway's own callbacks: a forged one is refused (401) and nothing is stored; duplicates are stored once", async () => {
      const sent = transfer();
      await rail.submit(sent, AbortSignal.timeout(5000));
      await settledLookup(sent.reference);
      await callbacksSettled(sim);
      const stored = await countRailInboxEvents(t.db, RAIL);
      const seen = await counters();
      await sim.control('POST', '/_control/callbacks', { badSignature: true });
      try {
        await sim.control('POST', `/_control/transfers/${sent.reference}/notify`, { notices: [{ status: 'SETTLED' }] });
        await until('the forged callback refused', async () => (await counters()).refused > seen.refused);
      } finally {
        await sim.control('POST', '/_control/callbacks', { badSignature: false });
      }
      assert.equal(await countRailInboxEvents(t.db, RAIL), stored, 'nothing stored');
      const before = await counters();
      await sim.control('POST', `/_control/transfers/${sent.reference}/notify`, {
        notices: [{ status: 'SETTLED' }],
        times: 3,
      });
      await until('three deliveries', async () => (await counters()).delivered >= before.delivered + 3);
      assert.equal(await countRailInboxEvents(t.db, RAIL), stored + 1, 'one event, delivered three times, stored once');
    });
  });

  describe('a live tenant paying through the connector', () => {
    let api: ReturnType<typeof client>;

    before(async () => {
      const tenant = await createTenant(t, { mode: 'live' });
      api = tenant.api;
      const funded = await client(t.app, t.platformKey).post(
        `/v1/admin/tenants/${tenant.tenantId}/fundings`,
        { mode: 'live', asset: 'BS', amount: 1_000_000_000 },
        { 'idempotency-key': newKey() },
      );
      assert.equal(funded.status, 201, funded.raw);
    });

    const paymentOf = async (id: string) => (await api.get(`/v1/payments/${id}`)).body;
    const reapUntil = (id: string, status: string) =>
      until(`payment ${id} ${status}`, async () => {
        await reaperOf(t).runOnce();
        return (await paymentOf(id)).status === status;
      });
    const recordsOf = async (id: string) => {
      const q = async (sql: string) => (await t.db.query(sql, [id])).rows;
      return {
        payment: await q(`SELECT status, status_reason, bank_reference, settled_at FROM payments WHERE id = $1`),
        events: await q(`SELECT event_type FROM outbox_events WHERE aggregate_id = $1 ORDER BY id`),
        entries: await q(`SELECT kind FROM ledger_transactions WHERE payment_id = $1 ORDER BY kind`),
      };
    };

    it('201, settles (by the callback or the reaper), one payment.settled, in the statement', async () => {
      const made = await payout(api, { beneficiary: beneficiary('V30000001') });
      assert.equal(made.status, 201, made.raw);
      assert.ok(['submitted', 'settled'].includes(made.body.status), made.raw);
      await reapUntil(made.body.id, 'settled');
      const records = await recordsOf(made.body.id);
      assert.deepEqual(
        records.events.map((e) => e.event_type),
        ['payment.settled'],
      );
      const statement = await api.get('/v1/payments?limit=100');
      assert.equal(statement.body.data.find((row: { id: string }) => row.id === made.body.id)?.status, 'settled');
      assert.equal(await submissionsOf(made.body.id), 1);
      await assertLedgerBalanced(t);
    });

    it('a send received but never answered: the payout is unknown, the reaper resolves it by lookup, never re-sent', async () => {
      await sim.control('POST', '/_control/scenarios/nid:V30000002', { kind: 'hang' });
      const made = await payout(api, { beneficiary: beneficiary('V30000002') });
      assert.equal(made.status, 201, made.raw);
      assert.equal(made.body.status, 'unknown', made.raw);
      await reapUntil(made.body.id, 'settled');
      assert.equal(await submissionsOf(made.body.id), 1);
      await assertLedgerBalanced(t);
    });

    it('a 5xx to the send: the payout is unknown (never failed), the reaper finds the transfer the gateway recorded, sent once', async () => {
      await sim.control('POST', '/_control/faults', { error5xx: 1 });
      const made = await payout(api, { beneficiary: beneficiary('V30000006') });
      assert.equal(made.status, 201, made.raw);
      assert.equal(made.body.status, 'unknown', made.raw);
      await reapUntil(made.body.id, 'settled');
      assert.equal(await submissionsOf(made.body.id), 1);
    });

    it('a send answered only past our timeout: the payout is unknown (never failed), resolved by asking, sent once', async () => {
      await sim.control('POST', '/_control/faults', { slowMs: 3 * RAIL_TIMEOUT_MS });
      let made;
      try {
        made = await payout(api, { beneficiary: beneficiary('V30000008') });
      } finally {
        await sim.control('POST', '/_control/faults', { slowMs: 0 });
      }
      assert.equal(made.status, 201, made.raw);
      assert.equal(made.body.status, 'unknown', made.raw);
      await reapUntil(made.body.id, 'settled');
      assert.equal(await submissionsOf(made.body.id), 1);
    });

    it('the gateway refusing connections: the payout stays submitted (provably not sent, and no other rail); the reaper, told the gateway never received it, sends it once it is back', async () => {
      await sim.control('POST', '/_control/faults', { refuse: true });
      let made;
      try {
        made = await payout(api, { beneficiary: beneficiary('V30000007') });
      } finally {
        await sim.control('POST', '/_control/faults', { refuse: false });
      }
      assert.equal(made.status, 201, made.raw);
      // Not `unknown`: a refused connection proves the transfer was not received, so it waits to be
      // sent, as after a crash before the send (with a second rail it would have gone there).
      assert.equal(made.body.status, 'submitted', made.raw);
      assert.equal(await submissionsOf(made.body.id), 0, 'nothing reached the gateway');
      await reapUntil(made.body.id, 'settled');
      assert.equal(await submissionsOf(made.body.id), 1);
      await assertLedgerBalanced(t);
    });

    it("callbacks out of order (the return before the settlement) end in the transfer's history: reversed", async () => {
      await sim.control('POST', '/_control/scenarios/nid:V30000003', { kind: 'processing' });
      const made = await payout(api, { beneficiary: beneficiary('V30000003') });
      assert.equal(made.body.status, 'submitted', made.raw);
      await sim.control('POST', '/_control/callbacks', { hold: true });
      try {
        await sim.control('POST', `/_control/transfers/${made.body.id}/outcome`, { status: 'SETTLED' });
        await sim.control('POST', `/_control/transfers/${made.body.id}/outcome`, {
          status: 'RETURNED',
          returnReason: 'account_closed',
        });
      } finally {
        await sim.control('POST', '/_control/callbacks', { hold: false });
      }
      const before = await counters();
      assert.equal((await sim.control('POST', '/_control/callbacks/release', { order: 'reverse' })).released, 2);
      await until('both callbacks recorded', async () => (await counters()).delivered >= before.delivered + 2);
      await reapUntil(made.body.id, 'reversed');
      const records = await recordsOf(made.body.id);
      assert.deepEqual(
        records.events.map((e) => e.event_type),
        ['payment.settled', 'payment.reversed'],
      );
      assert.equal(
        (
          await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM anomalies WHERE payment_id = $1`, [
            made.body.id,
          ])
        ).rows[0]?.n,
        0,
      );
      await assertLedgerBalanced(t);
    });

    it('a status that later contradicts itself (settled, then failed) opens an anomaly and leaves our records as they were', async () => {
      const made = await payout(api, { beneficiary: beneficiary('V30000004') });
      await reapUntil(made.body.id, 'settled');
      const records = await recordsOf(made.body.id);
      await sim.control('POST', `/_control/transfers/${made.body.id}/outcome`, {
        status: 'REJECTED',
        errorCode: 'ACCOUNT_INVALID',
      });
      await until('the anomaly opened', async () => {
        await reaperOf(t).runOnce();
        const { rows } = await t.db.query<{ kind: string }>(`SELECT kind FROM anomalies WHERE payment_id = $1`, [
          made.body.id,
        ]);
        return rows.length > 0 && rows.map((r) => r.kind);
      }).then((kinds) => assert.deepEqual(kinds, ['failed_after_settled']));
      assert.deepEqual(await recordsOf(made.body.id), records);
      assert.equal((await rail.lookup(made.body.id, 'live')).status, 'failed', 'the gateway now says failed');
      const pending = await rail.pendingNotifications(100);
      assert.deepEqual(
        pending.filter((n) => n.reference === made.body.id),
        [],
        'acknowledged once the anomaly was stored',
      );
      await assertLedgerBalanced(t);
    });

    it('a failure later reported settled opens settled_after_failed and leaves our records as they were', async () => {
      await sim.control('POST', '/_control/scenarios/nid:V30000005', { kind: 'fail', errorCode: 'ACCOUNT_INVALID' });
      const made = await payout(api, { beneficiary: beneficiary('V30000005') });
      assert.equal(made.body.status, 'failed', made.raw);
      assert.equal(made.body.reason, 'invalid_destination_account');
      const records = await recordsOf(made.body.id);
      await sim.control('POST', `/_control/transfers/${made.body.id}/outcome`, { status: 'SETTLED' });
      const kinds = await until('the anomaly opened', async () => {
        await reaperOf(t).runOnce();
        const { rows } = await t.db.query<{ kind: string }>(`SELECT kind FROM anomalies WHERE payment_id = $1`, [
          made.body.id,
        ]);
        return rows.length > 0 && rows.map((r) => r.kind);
      });
      assert.deepEqual(kinds, ['settled_after_failed']);
      assert.deepEqual(await recordsOf(made.body.id), records);
      await assertLedgerBalanced(t);
    });
  });
});

describe('HTTP bank connector: key rotation, and the connector kit factory', () => {
  let sim: GatewaySimulator;
  let t: TestApp;

  before(async () => {
    sim = await startGatewaySimulator({ settleDelayMs: 50 });
    ({ t } = await serviceWithGateway(sim));
  });

  after(async () => {
    // The gateway first: a callback in flight would hold the app's close for a keep-alive (75 s).
    await sim?.close();
    await t?.close();
  });

  const transfer = (): RailTransfer => ({
    reference: randomUUID(),
    tenantId: randomUUID(),
    mode: 'live',
    instrument: 'pago_movil',
    amountMinor: 99_000n,
    asset: 'BS',
    beneficiary: {
      fullName: 'José Gil',
      nationalId: 'V20333444',
      bankCode: '0102',
      accountNumber: null,
      phone: '04241234567',
    },
    sender: { ...SENDER, nationality: 'VE' },
  });

  it('the gateway accepts our previous key during a rotation, and refuses a key it does not know (401: unknown, never "not received")', async () => {
    const previous = new HttpBankRail(connectorConfigOf(sim, { keys: [TEST_REQUEST_KEYS[1]!] }), t.db, systemClock);
    const stranger = new HttpBankRail(
      connectorConfigOf(sim, { keys: [{ id: 'req-unknown', secret: 'a-key-the-gateway-never-had-0000' }] }),
      t.db,
      systemClock,
    );
    try {
      const sent = transfer();
      assert.equal((await previous.submit(sent, AbortSignal.timeout(5000))).status, 'processing');
      const refused = transfer();
      await assert.rejects(
        stranger.submit(refused, AbortSignal.timeout(5000)),
        (error) => !(error instanceof RailNotReceivedError) && /401 SIGNATURE_INVALID/.test((error as Error).message),
      );
      assert.equal(await simulatorBank(sim).submissionsOf(refused.reference), 0);
    } finally {
      await previous.close();
      await stranger.close();
    }
  });

  it('httpBankUnderTest: an adapter and a BankControl over the simulator, as the connector kit takes them', async () => {
    const under = await httpBankUnderTest();
    try {
      assert.equal(under.mode, 'live');
      assert.deepEqual([...under.bank.failureReasons].sort(), [...RAIL_FAILURE_REASONS].sort());
      const fails = await under.bank.arrange(transfer(), { kind: 'fail', reason: 'rail_insufficient_balance' });
      assert.deepEqual(await under.adapter.submit(fails, AbortSignal.timeout(5000)), {
        status: 'failed',
        reason: 'rail_insufficient_balance',
        amountMinor: 99_000n,
      });
      const hangs = await under.bank.arrange(transfer(), { kind: 'hang' });
      assert.deepEqual(await callRail(under.adapter, hangs, under.railTimeoutMs), { status: 'timeout' });
      assert.equal(await under.bank.submissionsOf(hangs.reference), 1);
      const held = await under.bank.arrange(transfer(), { kind: 'processing' });
      await under.adapter.submit(held, AbortSignal.timeout(5000));
      await under.bank.notify(held.reference, [{ kind: 'settled' }, { kind: 'reversed', reason: 'returned_by_bank' }], {
        times: 2,
      });
      const notices = (await under.adapter.pendingNotifications(100)).filter((n) => n.reference === held.reference);
      assert.deepEqual(
        notices.map((n) => n.kind),
        ['settled', 'reversed'],
        'each event once, oldest first',
      );
      for (const notice of notices) await under.adapter.acknowledgeNotification(notice.id);
      assert.deepEqual(
        (await under.adapter.pendingNotifications(100)).filter((n) => n.reference === held.reference),
        [],
      );
      await under.bank.unreachable!(true);
      await assert.rejects(under.adapter.submit(transfer(), AbortSignal.timeout(5000)), RailNotReceivedError);
      await under.bank.unreachable!(false);
      await under.bank.catalogueDown!(true);
      await assert.rejects(under.adapter.banks('pago_movil'));
      await under.bank.catalogueDown!(false);
    } finally {
      await under.close();
    }
  });
});

describe("the callback route: each rail's budget spent only by callbacks that verify (503 with Retry-After past it, never 429); unverified ones are bounded per address", () => {
  const MAX = 3;
  let sim: GatewaySimulator;
  let t: TestApp;

  before(async () => {
    // Both budgets tiny: the public per-address limit must not touch verified callbacks, the rail's own must.
    sim = await startGatewaySimulator({ settleDelayMs: 100 });
    ({ t } = await serviceWithGateway(sim, { env: { PUBLIC_RATE_LIMIT_RPS: '1', RAIL_CALLBACK_RPS: String(MAX) } }));
  });

  after(async () => {
    await sim?.close();
    await t?.close();
  });

  const post = async (raw: string, headers: Record<string, string>, remoteAddress: string) => {
    const answer = await t.app.inject({
      method: 'POST',
      url: `/v1/rails/${RAIL}/callbacks`,
      remoteAddress,
      headers: { 'content-type': 'application/json', ...headers },
      payload: raw,
    });
    return {
      status: answer.statusCode,
      statusCode: answer.statusCode,
      body: answer.json(),
      headers: answer.headers,
      raw: answer.body,
    };
  };
  const signed = () => {
    const raw = JSON.stringify({
      eventId: `evt_${randomUUID()}`,
      occurredAt: new Date().toISOString(),
      transfer: { reference: randomUUID(), status: 'PROCESSING' },
    });
    return { raw, headers: signRailMessage(TEST_CALLBACK_KEY, raw, Date.now()) };
  };

  it(`a stranger's unsigned flood is 401 then 429 and spends nothing of the rail's ${MAX} a second; the bank's then pass, and past the budget 503 overloaded`, async () => {
    const started = performance.now();
    const stranger = [];
    for (let i = 0; i < 3 * MAX; i += 1) stranger.push(await post('{}', {}, '203.0.113.66'));
    const bank = [];
    for (let i = 0; i < 3 * MAX; i += 1) {
      const { raw, headers } = signed();
      bank.push(await post(raw, headers, '198.51.100.9'));
    }
    const publicRoute = await t.app.inject({ method: 'GET', url: '/health/live', remoteAddress: '198.51.100.9' });
    const strangerStatuses = stranger.map((a) => a.statusCode).join(',');
    const bankStatuses = bank.map((a) => a.statusCode).join(',');
    assert.ok(!bank.some((a) => a.statusCode === 429), `a verified callback is never 429: ${bankStatuses}`);
    assert.ok(!stranger.some((a) => a.statusCode === 503 || a.statusCode === 200), `the stranger: ${strangerStatuses}`);
    assert.equal(stranger[0]!.statusCode, 401);
    for (const answer of stranger.filter((a) => a.statusCode === 429)) {
      assertEnvelope(assert, answer, 429, 'rate_limited');
      assert.ok(Number(answer.headers['retry-after']) >= 1, 'Retry-After');
    }
    if (performance.now() - started < 1000) {
      assert.equal(
        stranger.filter((a) => a.statusCode === 401).length,
        1,
        `one unverified a second from that address: ${strangerStatuses}`,
      );
      assert.equal(
        bank.filter((a) => a.statusCode === 200).length,
        MAX,
        `the stranger spent none of the rail's budget: ${bankStatuses}`,
      );
      assert.equal(publicRoute.statusCode, 200, 'the callbacks were not counted in the per-address limit');
    }
    const overloaded = bank.filter((a) => a.statusCode === 503);
    assert.ok(overloaded.length >= MAX, bankStatuses);
    for (const answer of overloaded) {
      assertEnvelope(assert, answer, 503, 'overloaded');
      assert.ok(Number(answer.headers['retry-after']) >= 1, 'Retry-After');
    }
  });
});

describe("the bank catalogue a tenant is served is its rail's: a live tenant routed to the gateway sees the gateway's lists", () => {
  let sim: GatewaySimulator;
  let t: TestApp;
  const shipped = new LocalBankCatalogue();
  // The gateway's transferencia list: one bank fewer than ours and one we do not ship.
  const gatewayTransferencia = [
    ...shipped.banksOf('transferencia').filter((bank) => bank.code !== '0105'),
    { code: '0199', name: 'Banco de Prueba del Gateway', shortName: 'Prueba' },
  ];

  before(async () => {
    sim = await startGatewaySimulator({ settleDelayMs: 100 });
    // Before the service asks anything: its first answer is cached for ten minutes.
    await sim.control('PUT', '/_control/catalogue', { transferencia: gatewayTransferencia, pago_movil: 'not a list' });
    ({ t } = await serviceWithGateway(sim));
  });

  after(async () => {
    await sim?.close();
    await t?.close();
  });

  it("serves the live tenant the gateway's list, the shipped one where the gateway's is unusable, and the sandbox's to a test key", async () => {
    const live = await createTenant(t, { mode: 'live' });
    const test = await createTenant(t);
    const liveTransferencia = await live.api.get('/v1/payouts/banks?method=transferencia');
    assert.equal(liveTransferencia.status, 200, liveTransferencia.raw);
    assert.deepEqual(liveTransferencia.body.data, gatewayTransferencia);
    const livePagoMovil = await live.api.get('/v1/payouts/banks?method=pago_movil');
    assert.deepEqual(
      livePagoMovil.body.data,
      shipped.banksOf('pago_movil'),
      'the fallback: the gateway answered no usable list',
    );
    const testTransferencia = await test.api.get('/v1/payouts/banks?method=transferencia');
    assert.deepEqual(
      testTransferencia.body.data,
      shipped.banksOf('transferencia'),
      'a test key is routed to the sandbox',
    );
  });

  it("registers a beneficiary by the served list: the gateway's bank for the live tenant, not for the test one", async () => {
    const live = await createTenant(t, { mode: 'live' });
    const test = await createTenant(t);
    const at0199 = {
      fullName: 'Ana Rojas',
      nationalId: 'V12345678',
      bankCode: '0199',
      accountNumber: `0199${'0'.repeat(15)}1`,
    };
    const registered = await live.api.post('/v1/beneficiaries', at0199);
    assert.equal(registered.status, 201, registered.raw);
    assertEnvelope(assert, await test.api.post('/v1/beneficiaries', at0199), 400, 'validation_failed');
    const at0105 = { ...at0199, bankCode: '0105', accountNumber: `0105${'0'.repeat(15)}1` };
    assertEnvelope(assert, await live.api.post('/v1/beneficiaries', at0105), 400, 'validation_failed');
    assert.equal((await test.api.post('/v1/beneficiaries', at0105)).status, 201);
  });
});
