import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { after, afterEach, before, describe, it } from 'node:test';
import { insertOutboxEvent } from '../support/outbox.ts';
import { upsertWebhookEndpoint } from '../../src/db/repositories/webhooks.ts';
import { ManualClock } from '../support/clock.ts';
import { BACKOFF_WAITS_SECONDS, generateWebhookSecret, mayReachAddress } from '../../src/domain/webhooks.ts';
import { verifyWebhook } from '../../sdk/src/webhooks.ts';
import { computeSignature } from '../../src/domain/webhook-signature.ts';
import { DISPATCH_LEASE_MARGIN_MS, NO_ENDPOINT_ERROR } from '../../src/workers/webhook-dispatcher.ts';
import { startLoop } from '../../src/workers/run-loop.ts';
import pino from 'pino';
import { client, createTenant, startTestApp, type TestApp } from '../support/harness.ts';
import { AMPLE_RAIL_TIMEOUT_MS, beneficiary, type FundedTenant, fundedTenant, payout } from '../support/payouts.ts';
import {
  answer,
  deliveryRows,
  dispatcherFor,
  eventRow,
  eventsOfPayment,
  setEndpoint,
  TestReceiver,
} from '../support/webhooks.ts';
import { until } from '../support/until.ts';

const TIMEOUT_MS = 200;
/**
 * The delivery timeout when a slow receiver must not hold back others: long enough that, on a loaded
 * machine, the other receiver's event goes out well before the slow delivery gives up.
 */
const SLOW_RECEIVER_TIMEOUT_MS = 10_000;
/** What a pass that gives up at a timeout may take beyond it on a loaded machine (the receiver itself hangs until released). */
const BUSY_MACHINE_MARGIN_MS = 5_000;

describe('webhook delivery to a real receiver', () => {
  let t: TestApp;
  let clock: ManualClock;
  const receivers: TestReceiver[] = [];
  const receiver = async (behaviour?: Parameters<typeof TestReceiver.start>[0], host?: string) => {
    const r = await TestReceiver.start(behaviour, host);
    receivers.push(r);
    return r;
  };
  const dispatcher = (
    settings: Parameters<typeof dispatcherFor>[2] = {},
    transport: Parameters<typeof dispatcherFor>[3] = {},
  ) => dispatcherFor(t.db, clock, { timeoutMs: TIMEOUT_MS, ...settings }, transport);

  /**
   * A tenant with its endpoint at `url` and one pending `payment.settled` event: written to the
   * outbox as a settled payout writes it, or produced by a real sandbox payout (`viaPayout`).
   */
  async function settledEvent(
    url: string | undefined,
    tenant?: FundedTenant,
    options: { viaPayout?: boolean } = {},
  ): Promise<{ tenant: FundedTenant; secret?: string; eventId: string; paymentId: string }> {
    const owner = tenant ?? (options.viaPayout ? await fundedTenant(t) : await createTenant(t));
    const secret = url ? await setEndpoint(t, owner.tenantId, url) : undefined;
    if (options.viaPayout) {
      const response = await payout(owner.api, { beneficiary: beneficiary('V99990001') });
      assert.equal(response.body.status, 'settled', response.raw);
      const [event] = await eventsOfPayment(t.db, owner.tenantId, response.body.id);
      return { tenant: owner, secret, eventId: event.id.toString(), paymentId: response.body.id };
    }
    const paymentId = randomUUID();
    const payload = { paymentId, asset: 'BS', amount: '1000000', bankReference: '123456789012', method: 'pago_movil' };
    const id = await insertOutboxEvent(t.db, {
      tenantId: owner.tenantId,
      mode: 'test',
      type: 'payment.settled',
      paymentId,
      payload,
      at: clock.now(),
    });
    return { tenant: owner, secret, eventId: id.toString(), paymentId };
  }

  before(async () => {
    clock = new ManualClock(new Date());
    t = await startTestApp({
      clock,
      env: { WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS) },
    });
  });
  afterEach(async () => {
    // Whatever a test left pending must not be retried by the next one.
    await t.db.query(
      `UPDATE outbox_events SET status = 'dead', dead_at = now(), next_attempt_at = NULL WHERE status = 'pending'`,
    );
  });
  after(async () => {
    for (const r of receivers) await r.close();
    await t.close();
  });

  it('POSTs the exact body, signed over the raw bytes, with every header; the event is published', async () => {
    const r = await receiver();
    const { secret, eventId, paymentId } = await settledEvent(r.url(), undefined, { viaPayout: true });
    const d = dispatcher();
    await d.dispatchDue();
    await d.close();

    assert.equal(r.requests.length, 1);
    const [request] = r.requests;
    assert.equal(request!.method, 'POST');
    assert.equal(request!.path, '/hook');
    const h = request!.headers;
    assert.equal(h['content-type'], 'application/json');
    assert.equal(h['x-event-id'], eventId);
    assert.equal(h['x-event-type'], 'payment.settled');
    assert.equal(h['x-delivery-attempt'], '1');
    assert.equal(h['x-timestamp'], String(clock.now().getTime()));
    assert.match(String(h['x-signature']), /^sha256=[0-9a-f]{64}$/);
    assert.equal(h['x-signature'], `sha256=${computeSignature(secret!, String(h['x-timestamp']), request!.rawBody)}`);

    const stored = await eventRow(t.db, eventId);
    const expected = `{"id":"${eventId}","eventType":"payment.settled","attempt":1,"payload":${stored.payload_text}}`;
    assert.equal(
      request!.rawBody.toString('utf8'),
      expected,
      'the body is built from the stored payload text, byte for byte',
    );
    assert.deepEqual(Object.keys(request!.body), ['id', 'eventType', 'attempt', 'payload']);
    assert.deepEqual(Object.keys(request!.body.payload).sort(), [
      'amount',
      'asset',
      'bankReference',
      'metadata',
      'method',
      'paymentId',
    ]);
    assert.equal(request!.body.payload.paymentId, paymentId);

    const verified = verifyWebhook({
      secret: secret!,
      headers: h,
      rawBody: request!.rawBody,
      nowMs: clock.now().getTime(),
    });
    assert.deepEqual(verified, { ok: true, timestampMs: clock.now().getTime(), eventId });
    const tampered = Buffer.from(request!.rawBody.toString('utf8').replace('"attempt":1', '"attempt":2'));
    assert.equal(
      verifyWebhook({ secret: secret!, headers: h, rawBody: tampered, nowMs: clock.now().getTime() }).ok,
      false,
    );

    assert.equal(stored.status, 'published');
    assert.equal(stored.attempts, 1);
    assert.equal(stored.last_error, null);
    assert.equal(stored.next_attempt_at, null);
    assert.equal(stored.published_at.getTime(), clock.now().getTime());
    assert.equal(stored.locked_until, null);
    const deliveries = await deliveryRows(t.db, eventId);
    assert.equal(deliveries.length, 1);
    assert.equal(deliveries[0].status_code, 200);
    assert.equal(deliveries[0].ok, true);
    assert.equal(deliveries[0].error, null);
    assert.ok(deliveries[0].duration_ms >= 0 && deliveries[0].duration_ms < 5000);
  });

  it('retries on the exact backoff schedule, numbering attempts, until a 2xx', async () => {
    const r = await receiver();
    let calls = 0;
    r.behaviour = (request, response) => answer(++calls <= 3 ? 500 : 204)(request, response);
    const { eventId } = await settledEvent(r.url());
    const d = dispatcher();
    const waits: number[] = [];
    for (let attempt = 1; attempt <= 4; attempt += 1) {
      await d.dispatchDue();
      assert.equal(r.requests.length, attempt, `attempt ${attempt} was made`);
      const event = await eventRow(t.db, eventId);
      assert.equal(event.attempts, attempt);
      if (attempt < 4) {
        assert.equal(event.status, 'pending');
        assert.equal(event.last_error, 'HTTP 500');
        const waitMs = event.next_attempt_at.getTime() - clock.now().getTime();
        waits.push(waitMs);
        // Nothing goes out before the wait is over…
        clock.advance(waitMs - 1);
        await d.dispatchDue();
        assert.equal(r.requests.length, attempt, 'no attempt before next_attempt_at');
        clock.advance(1);
      } else {
        assert.equal(event.status, 'published');
        assert.equal(event.last_error, null);
      }
    }
    await d.close();
    assert.deepEqual(waits, [5000, 15000, 45000]);
    assert.deepEqual(
      r.requests.map((q) => q.headers['x-delivery-attempt']),
      ['1', '2', '3', '4'],
    );
    assert.deepEqual(
      r.requests.map((q) => q.body.attempt),
      [1, 2, 3, 4],
    );
    assert.equal(new Set(r.eventIds()).size, 1, 'the same event id every time');
    const deliveries = await deliveryRows(t.db, eventId);
    assert.deepEqual(
      deliveries.map((x: any) => [x.attempt, x.status_code, x.ok, x.error]),
      [
        [1, 500, false, 'HTTP 500'],
        [2, 500, false, 'HTTP 500'],
        [3, 500, false, 'HTTP 500'],
        [4, 204, true, null],
      ],
    );
  });

  it('follows the whole schedule, then marks the event dead after the 12th failure', async () => {
    const r = await receiver(answer(503));
    const { eventId } = await settledEvent(r.url());
    const d = dispatcher();
    const waits: number[] = [];
    for (let attempt = 1; attempt <= 12; attempt += 1) {
      await d.dispatchDue();
      const event = await eventRow(t.db, eventId);
      assert.equal(event.attempts, attempt);
      if (attempt < 12) {
        assert.equal(event.status, 'pending');
        const waitMs = event.next_attempt_at.getTime() - clock.now().getTime();
        waits.push(waitMs / 1000);
        clock.advance(waitMs);
      }
    }
    await d.close();
    assert.deepEqual(waits, [...BACKOFF_WAITS_SECONDS]);
    const dead = await eventRow(t.db, eventId);
    assert.equal(dead.status, 'dead');
    assert.equal(dead.dead_at.getTime(), clock.now().getTime());
    assert.equal(dead.next_attempt_at, null);
    assert.equal(dead.last_error, 'HTTP 503');
    assert.equal(r.requests.length, 12);
    clock.advance(86_400_000);
    await dispatcher().dispatchDue();
    assert.equal(r.requests.length, 12, 'a dead event is not retried by itself');
  });

  it('WEBHOOK_BACKOFF_SCALE multiplies every wait: dead after 12 attempts in well under a minute of clock', async () => {
    const r = await receiver(answer(500));
    const { eventId } = await settledEvent(r.url());
    const d = dispatcher({ backoffScale: 0.001 });
    const startedMs = clock.now().getTime();
    for (let attempt = 1; attempt <= 12; attempt += 1) {
      await d.dispatchDue();
      const event = await eventRow(t.db, eventId);
      if (attempt === 1) assert.equal(event.next_attempt_at.getTime() - clock.now().getTime(), 5);
      if (event.next_attempt_at) clock.set(event.next_attempt_at);
    }
    await d.close();
    const event = await eventRow(t.db, eventId);
    assert.equal(event.status, 'dead');
    assert.equal(event.attempts, 12);
    assert.equal(clock.now().getTime() - startedMs, Math.round(BACKOFF_WAITS_SECONDS.reduce((a, b) => a + b, 0)));
  });

  it('a requeued dead event is delivered with the next attempt number; retry-dead requeues the failed queue', async () => {
    const r = await receiver(answer(500));
    const first = await settledEvent(r.url());
    const second = await settledEvent(undefined, first.tenant);
    const d = dispatcher({ backoffScale: 0 });
    await d.dispatchDue();
    for (const { eventId } of [first, second]) assert.equal((await eventRow(t.db, eventId)).status, 'dead');
    assert.equal(r.requests.length, 24);

    r.behaviour = answer(200);
    const retried = await first.tenant.api.post(`/v1/events/${first.eventId}/retry`);
    assert.equal(retried.status, 200, retried.raw);
    assert.deepEqual(retried.body, {
      id: first.eventId,
      event_type: 'payment.settled',
      status: 'pending',
      attempts: 12,
      requeued: true,
    });
    const requeued = await eventRow(t.db, first.eventId);
    assert.equal(requeued.dead_at, null);
    assert.equal(requeued.next_attempt_at.getTime(), clock.now().getTime());
    await d.dispatchDue();
    assert.equal(r.requests.at(-1)!.headers['x-delivery-attempt'], '13');
    assert.equal((await eventRow(t.db, first.eventId)).status, 'published');
    assert.equal((await eventRow(t.db, second.eventId)).status, 'dead', 'only the retried event moved');

    const all = await first.tenant.api.post('/v1/events/retry-dead');
    assert.deepEqual(all.body, { requeued: 1 });
    await d.dispatchDue();
    assert.equal((await eventRow(t.db, second.eventId)).status, 'published');
    assert.deepEqual((await first.tenant.api.post('/v1/events/retry-dead')).body, { requeued: 0 });

    // A published event can be sent again on request.
    const again = await first.tenant.api.post(`/v1/events/${first.eventId}/retry`);
    assert.equal(again.body.requeued, true);
    assert.equal(again.body.status, 'pending');
    await d.dispatchDue();
    assert.equal(r.requests.at(-1)!.headers['x-delivery-attempt'], '14');
    await d.close();
  });

  it('a receiver that hangs past WEBHOOK_TIMEOUT_MS is a failure with status_code null', async () => {
    const r = await receiver();
    r.behaviour = r.hang();
    const { eventId } = await settledEvent(r.url());
    const d = dispatcher();
    const startedAt = Date.now();
    await d.dispatchDue();
    const tookMs = Date.now() - startedAt;
    r.releaseHanging();
    await d.close();
    assert.ok(tookMs >= TIMEOUT_MS - 20 && tookMs < TIMEOUT_MS + BUSY_MACHINE_MARGIN_MS, `gave up after ${tookMs} ms`);
    const [delivery] = await deliveryRows(t.db, eventId);
    assert.equal(delivery.status_code, null);
    assert.equal(delivery.ok, false);
    assert.match(delivery.error, /^timed out after 200 ms/);
    assert.ok(delivery.duration_ms >= TIMEOUT_MS - 20, `duration ${delivery.duration_ms}`);
    const event = await eventRow(t.db, eventId);
    assert.equal(event.status, 'pending');
    assert.equal(event.attempts, 1);
    assert.match(event.last_error, /timed out/);
  });

  it('a body that never finishes after the status line also times out', async () => {
    const r = await receiver((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
      response.write('partial');
    });
    const { eventId } = await settledEvent(r.url());
    const d = dispatcher();
    await d.dispatchDue();
    await d.close();
    const [delivery] = await deliveryRows(t.db, eventId);
    assert.equal(delivery.ok, false);
    assert.match(delivery.error, /timed out/);
    assert.equal((await eventRow(t.db, eventId)).status, 'pending');
  });

  it('redirects are not followed: a 3xx is a failure', async () => {
    const target = await receiver();
    const r = await receiver(answer(307, { location: target.url('/elsewhere') }));
    const { eventId } = await settledEvent(r.url());
    const d = dispatcher();
    await d.dispatchDue();
    await d.close();
    assert.equal(target.requests.length, 0, 'the redirect target was never called');
    const [delivery] = await deliveryRows(t.db, eventId);
    assert.equal(delivery.status_code, 307);
    assert.equal(delivery.ok, false);
    assert.match(delivery.error, /HTTP 307: redirects are not followed/);
    assert.equal((await eventRow(t.db, eventId)).status, 'pending');
  });

  it('a refused connection is a failure with status_code null', async () => {
    const r = await receiver();
    const url = r.url();
    await r.close();
    receivers.splice(receivers.indexOf(r), 1);
    const { eventId } = await settledEvent(url);
    const d = dispatcher();
    await d.dispatchDue();
    await d.close();
    const [delivery] = await deliveryRows(t.db, eventId);
    assert.equal(delivery.status_code, null);
    assert.match(delivery.error, /ECONNREFUSED/);
  });

  it('during a rotation overlap both secrets sign, new first; afterwards only the new one', async () => {
    const r = await receiver();
    const tenant = await createTenant(t);
    const oldSecret = await setEndpoint(t, tenant.tenantId, r.url());
    const rotated = await client(t.app, t.platformKey).post(
      `/v1/admin/tenants/${tenant.tenantId}/webhook-endpoint/rotate-secret`,
      { mode: 'test' },
    );
    assert.equal(rotated.status, 200, rotated.raw);
    const newSecret: string = rotated.body.secret;
    assert.notEqual(newSecret, oldSecret);
    assert.equal(rotated.body.previousSecretExpiresAt, new Date(clock.now().getTime() + 24 * 3_600_000).toISOString());

    await settledEvent(undefined, tenant);
    const d = dispatcher();
    await d.dispatchDue();
    const during = r.requests.at(-1)!;
    const ts = String(during.headers['x-timestamp']);
    assert.equal(
      during.headers['x-signature'],
      `sha256=${computeSignature(newSecret, ts, during.rawBody)},sha256=${computeSignature(oldSecret, ts, during.rawBody)}`,
    );
    const nowMs = clock.now().getTime();
    assert.equal(
      verifyWebhook({ secret: oldSecret, headers: during.headers, rawBody: during.rawBody, nowMs }).ok,
      true,
      'a receiver still on the old secret accepts',
    );
    assert.equal(
      verifyWebhook({ secret: newSecret, headers: during.headers, rawBody: during.rawBody, nowMs }).ok,
      true,
      'a receiver on the new secret accepts',
    );

    clock.advance(24 * 3_600_000 + 1);
    await settledEvent(undefined, tenant);
    await d.dispatchDue();
    await d.close();
    const afterOverlap = r.requests.at(-1)!;
    const ts2 = String(afterOverlap.headers['x-timestamp']);
    assert.equal(
      afterOverlap.headers['x-signature'],
      `sha256=${computeSignature(newSecret, ts2, afterOverlap.rawBody)}`,
    );
    assert.equal(
      verifyWebhook({
        secret: oldSecret,
        headers: afterOverlap.headers,
        rawBody: afterOverlap.rawBody,
        nowMs: clock.now().getTime(),
      }).ok,
      false,
    );
  });

  it('a dispatcher that dies after claiming (even after sending) loses nothing: the lease expires and the attempt is redelivered', async () => {
    const r = await receiver();
    const { eventId } = await settledEvent(r.url());
    const crashed = dispatcher();
    const claimed = await crashed.claim(10);
    assert.deepEqual(
      claimed.map((e) => e.id.toString()),
      [eventId],
    );
    await crashed.send(claimed[0]!); // delivered, then the process "dies" before recording
    assert.equal(r.requests.length, 1);

    const survivor = dispatcher();
    await survivor.dispatchDue();
    assert.equal(r.requests.length, 1, 'the lease keeps the event away from other dispatchers');
    assert.equal((await eventRow(t.db, eventId)).status, 'pending');

    clock.advance(TIMEOUT_MS + DISPATCH_LEASE_MARGIN_MS);
    await survivor.dispatchDue();
    assert.equal(r.requests.length, 2, 'redelivered once the lease expired');
    assert.deepEqual(
      r.requests.map((q) => [q.headers['x-event-id'], q.headers['x-delivery-attempt']]),
      [
        [eventId, '1'],
        [eventId, '1'],
      ],
    );
    const event = await eventRow(t.db, eventId);
    assert.equal(event.status, 'published');
    assert.equal(event.attempts, 1);
    assert.equal((await deliveryRows(t.db, eventId)).length, 1);

    // The dead dispatcher's late write changes nothing.
    assert.equal(
      await crashed.record(claimed[0]!, { statusCode: 500, ok: false, error: 'HTTP 500', durationMs: 1 }),
      false,
    );
    assert.equal((await eventRow(t.db, eventId)).status, 'published');
    await survivor.close();
    await crashed.close();
  });

  it('without an endpoint the attempt is counted with an error and retried on schedule', async () => {
    const { eventId } = await settledEvent(undefined);
    const d = dispatcher();
    await d.dispatchDue();
    await d.close();
    const event = await eventRow(t.db, eventId);
    assert.equal(event.status, 'pending');
    assert.equal(event.attempts, 1);
    assert.equal(event.last_error, NO_ENDPOINT_ERROR);
    assert.equal(event.next_attempt_at.getTime() - clock.now().getTime(), 5000);
    const [delivery] = await deliveryRows(t.db, eventId);
    assert.deepEqual(
      [delivery.status_code, delivery.ok, delivery.error, delivery.duration_ms],
      [null, false, NO_ENDPOINT_ERROR, 0],
    );
  });

  it('live mode: a loopback endpoint that slipped past configuration is refused at send time, by literal and by name', async () => {
    const r = await receiver();
    const live = await createTenant(t, { mode: 'live' });
    const eventIds: bigint[] = [];
    for (const url of [
      r.url('/literal'),
      `http://localhost:${r.port}/by-name`,
      `http://[::ffff:127.0.0.1]:${r.port}/mapped`,
    ]) {
      // Written directly: the admin API would refuse these URLs in live mode.
      await upsertWebhookEndpoint(t.db, {
        tenantId: live.tenantId,
        mode: 'live',
        url,
        origin: new URL(url).origin,
        secretIfNew: generateWebhookSecret(),
        at: clock.now(),
      });
      const id = await insertOutboxEvent(t.db, {
        tenantId: live.tenantId,
        mode: 'live',
        type: 'payment.failed',
        paymentId: randomUUID(),
        payload: { reason: 'rail_rejected' },
        at: clock.now(),
      });
      eventIds.push(id);
      const d = dispatcher();
      await d.dispatchDue();
      await d.close();
      const [delivery] = await deliveryRows(t.db, id);
      assert.equal(delivery.status_code, null, url);
      assert.match(delivery.error, /not allowed in live mode/, `${url}: ${delivery.error}`);
    }
    assert.equal(r.requests.length, 0, 'the receiver on loopback was never reached');
  });

  // An address of this machine that test mode may not reach (a private or reserved one), if it has one.
  const internal = Object.values(networkInterfaces())
    .flat()
    .find((a) => a !== undefined && a.family === 'IPv4' && !a.internal && !mayReachAddress('test', a.address))?.address;
  it(
    "test mode: a private endpoint that slipped past configuration is refused at send time; loopback and the service's own origin are reached",
    { skip: internal === undefined ? 'this machine has no private or reserved IPv4 address to listen on' : false },
    async () => {
      const lan = await receiver(undefined, internal);
      const local = await receiver();
      const { tenantId } = await createTenant(t, { mode: 'test' });
      const deliverTo = async (url: string, transport: { ownOrigin?: string } = {}) => {
        // Written directly: the admin API refuses private URLs in test mode too.
        await upsertWebhookEndpoint(t.db, {
          tenantId,
          mode: 'test',
          url,
          origin: new URL(url).origin,
          secretIfNew: generateWebhookSecret(),
          at: clock.now(),
        });
        const id = await insertOutboxEvent(t.db, {
          tenantId,
          mode: 'test',
          type: 'payment.failed',
          paymentId: randomUUID(),
          payload: { reason: 'rail_rejected' },
          at: clock.now(),
        });
        const d = dispatcher({}, transport);
        await d.dispatchDue();
        await d.close();
        const [delivery] = await deliveryRows(t.db, id);
        return delivery;
      };
      for (const url of [lan.url('/literal'), `http://[::ffff:${internal}]:${lan.port}/mapped`]) {
        const delivery = await deliverTo(url);
        assert.equal(delivery.status_code, null, url);
        assert.match(
          delivery.error,
          /not allowed in test mode: .* resolves to a private, link-local or metadata address/,
          `${url}: ${delivery.error}`,
        );
      }
      assert.equal(lan.requests.length, 0, 'the receiver on the private address was never reached');
      assert.equal(
        (await deliverTo(`http://localhost:${local.port}/by-name`)).status_code,
        200,
        'loopback by name is reached in test mode',
      );
      assert.equal(local.requests.length, 1);
      const own = await deliverTo(lan.url('/v1/sandbox/webhooks/sink'), { ownOrigin: new URL(lan.url()).origin });
      assert.equal(own.status_code, 200, "the service's own origin (PUBLIC_BASE_URL) is reached wherever it is");
      assert.deepEqual(
        lan.requests.map((r) => r.path),
        ['/v1/sandbox/webhooks/sink'],
      );
    },
  );

  it('one slow receiver cannot starve the others: its events are not claimed beyond its share of slots', async () => {
    const slow = await receiver();
    slow.behaviour = slow.hang();
    const fast = await receiver();
    const slowTenant = await createTenant(t);
    const fastTenant = await createTenant(t);
    await setEndpoint(t, slowTenant.tenantId, slow.url());
    await setEndpoint(t, fastTenant.tenantId, fast.url());
    for (let i = 0; i < 6; i += 1) await settledEvent(undefined, slowTenant); // older: first in the queue
    for (let i = 0; i < 6; i += 1) await settledEvent(undefined, fastTenant);

    const d = dispatcher({ timeoutMs: 5000, concurrency: 4, originConcurrency: 2, batchMax: 4 });
    await until(
      'every event of the healthy receiver out',
      async () => {
        await d.runOnce();
        return fast.requests.length >= 6;
      },
      { timeoutMs: 4000, intervalMs: 5 },
    );
    assert.equal(fast.requests.length, 6, 'every event of the healthy receiver went out while the slow one hung');
    assert.equal(slow.requests.length, 2, 'the slow receiver holds only its share of the slots');
    slow.behaviour = answer(200);
    slow.releaseHanging();
    await d.dispatchDue();
    await d.close();
    assert.equal(slow.requests.length, 6);
    const { rows } = await t.db.query<{ status: string }>(
      `SELECT status FROM outbox_events WHERE tenant_id = ANY($1::uuid[])`,
      [[slowTenant.tenantId, fastTenant.tenantId]],
    );
    assert.deepEqual(
      rows.map((row) => row.status),
      Array(12).fill('published'),
    );
  });

  it('in the worker loop, a slow delivery in flight does not hold back newly due events for other receivers', async () => {
    const slow = await receiver();
    slow.behaviour = slow.hang();
    const fast = await receiver();
    const slowTenant = await createTenant(t);
    const fastTenant = await createTenant(t);
    await setEndpoint(t, slowTenant.tenantId, slow.url());
    await setEndpoint(t, fastTenant.tenantId, fast.url());
    const { eventId: slowEventId } = await settledEvent(undefined, slowTenant);
    const d = dispatcher({ timeoutMs: SLOW_RECEIVER_TIMEOUT_MS, pollIntervalMs: 50 });
    const loop = startLoop({
      name: 'webhook-dispatcher',
      intervalMs: 50,
      runOnce: () => d.runOnce(),
      log: pino({ level: 'silent' }) as never,
    });
    try {
      await until('the slow delivery in flight', () => slow.requests.length === 1, { timeoutMs: 3000, intervalMs: 5 });
      await settledEvent(undefined, fastTenant);
      await until('the new event out', () => fast.requests.length === 1, {
        timeoutMs: SLOW_RECEIVER_TIMEOUT_MS,
        intervalMs: 5,
      });
      // Not after the slow receiver's timeout: that delivery is still in flight, nothing recorded of it yet.
      assert.deepEqual(
        await deliveryRows(t.db, slowEventId),
        [],
        'the new event waited for the slow delivery to give up',
      );
      assert.equal(slow.requests.length, 1);
    } finally {
      slow.behaviour = answer(200);
      slow.releaseHanging();
      await loop.stop();
      await d.close();
    }
  });
});
