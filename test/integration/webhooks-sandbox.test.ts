import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AddressInfo } from 'node:net';
import type { Database } from '../../src/db/database.ts';
import { findWebhookEndpoint } from '../support/webhook-endpoint.ts';
import { ManualClock } from '../support/clock.ts';
import { deliveryBody, deliveryHeaders } from '../../src/domain/webhooks.ts';
import { bootstrapIfEmpty } from '../../src/services/bootstrap.ts';
import { signatureHeader } from '../../src/domain/webhook-signature.ts';
import { bootstrapSteps, sandboxSinkUrl } from '../../src/workers/index.ts';
import {
  assertEnvelope,
  client,
  createTenant,
  startTestApp,
  type InjectResult,
  type TestApp,
} from '../support/harness.ts';
import { AMPLE_RAIL_TIMEOUT_MS, beneficiary, fundedTenant, payout } from '../support/payouts.ts';
import { deliveryRows, dispatcherFor, eventsOfPayment, setEndpoint } from '../support/webhooks.ts';

const SINK = '/v1/sandbox/webhooks/sink';

describe('sandbox webhook receivers', () => {
  let t: TestApp;
  let clock: ManualClock;
  let baseUrl: string;
  before(async () => {
    clock = new ManualClock(new Date());
    t = await startTestApp({ clock, env: { SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS) } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await t.close();
  });

  /**
   * An outbox event of this program, already published so that no dispatcher run of this file
   * delivers it on its own: the tests deliver it by hand.
   */
  async function outboxEvent(
    tenantId: string,
    mode: 'test' | 'live' = 'test',
  ): Promise<{ id: string; payloadText: string }> {
    const payloadText = JSON.stringify({ paymentId: randomUUID(), asset: 'BS', amount: '5000000' });
    const { rows } = await t.db.query<{ id: bigint }>(
      `INSERT INTO outbox_events (tenant_id, mode, event_type, aggregate_type, aggregate_id, payload, payload_text, status, attempts, published_at, created_at)
       VALUES ($1, $2, 'payment.settled', 'payment', $3, $4::jsonb, $4, 'published', 1, now(), now()) RETURNING id`,
      [tenantId, mode, randomUUID(), payloadText],
    );
    return { id: rows[0]!.id.toString(), payloadText };
  }

  /** What our dispatcher would send for this event, signed with `secrets` at `timestampMs`. */
  function delivery(
    event: { id: string; payloadText: string },
    secrets: string[],
    options: { timestampMs?: number; attempt?: number } = {},
  ) {
    const attempt = options.attempt ?? 1;
    const body = deliveryBody({ id: event.id, eventType: 'payment.settled', attempt, payloadText: event.payloadText });
    const headers = deliveryHeaders({
      eventId: event.id,
      eventType: 'payment.settled',
      attempt,
      body,
      timestampMs: options.timestampMs ?? clock.now().getTime(),
      secrets,
    });
    return { headers, body };
  }

  async function post(
    request: { headers: Record<string, string>; body: string | Buffer },
    query = '',
  ): Promise<InjectResult> {
    const response = await t.app.inject({
      method: 'POST',
      url: `${SINK}${query}`,
      headers: request.headers,
      payload: request.body,
    });
    return { status: response.statusCode, body: response.json(), headers: response.headers, raw: response.body };
  }

  async function receiptCount(db: Database): Promise<number> {
    const { rows } = await db.query<{ n: string }>('SELECT count(*)::text AS n FROM sandbox_webhook_receipts');
    return Number(rows[0]!.n);
  }

  /** The one answer every refusal gets: nothing in it may tell one refusal from another. */
  function assertRefused(response: InjectResult): void {
    assertEnvelope(assert, response, 401, 'webhook_signature_invalid');
    assert.equal(response.body.error.type, 'authentication_error');
    assert.deepEqual(Object.keys(response.body.error).sort(), ['code', 'message', 'request_id', 'type']);
  }

  it('the bootstrap points the sandbox tenant at the sink (no query string); a payout outcome lands there, verified', async () => {
    const config = {
      dataDir: mkdtempSync(path.join(tmpdir(), 'bds-sink-')),
      platformApiKey: t.platformKey,
      publicBaseUrl: baseUrl,
      port: 0,
    };
    const boot = await bootstrapIfEmpty(t.db, config, bootstrapSteps(t.config));
    assert.ok(boot);
    const endpoint = await findWebhookEndpoint(t.db, boot.tenantId, 'test');
    assert.equal(endpoint?.url, `${baseUrl}/v1/sandbox/webhooks/sink`);
    assert.equal(sandboxSinkUrl(baseUrl), endpoint?.url);
    assert.match(endpoint!.secret, /^whsec_[0-9A-Za-z]{32,}$/);

    const api = client(t.app, boot.apiKey);
    const response = await payout(api, { beneficiary: beneficiary('V99990001') });
    assert.equal(response.body.status, 'settled', response.raw);
    const d = dispatcherFor(t.db, clock);
    await d.dispatchDue();
    await d.close();
    const [event] = await eventsOfPayment(t.db, boot.tenantId, response.body.id);
    assert.equal(event.status, 'published');
    assert.deepEqual(
      (await deliveryRows(t.db, event.id)).map((x: any) => [x.status_code, x.ok]),
      [[200, true]],
    );

    const list = await api.get('/v1/sandbox/webhooks');
    assert.equal(list.status, 200, list.raw);
    assert.equal(list.body.data.length, 1);
    assert.equal(list.body.has_more, false);
    assert.equal(list.body.next_cursor, null);
    const [received] = list.body.data;
    assert.deepEqual(Object.keys(received).sort(), [
      'event_id',
      'headers',
      'id',
      'raw_body',
      'received_at',
      'signature_verified',
    ]);
    assert.equal(received.signature_verified, true);
    assert.equal(received.event_id, event.id.toString());
    assert.equal(
      received.raw_body,
      `{"id":"${event.id}","eventType":"payment.settled","attempt":1,"payload":${event.payload_text}}`,
    );
    for (const name of [
      'content-type',
      'x-signature',
      'x-timestamp',
      'x-event-type',
      'x-event-id',
      'x-delivery-attempt',
    ]) {
      assert.equal(typeof received.headers[name], 'string', `${name} stored`);
    }
    assert.equal(received.headers['x-event-id'], event.id.toString());

    const detail = await api.get(`/v1/events/${event.id}`);
    assert.deepEqual(
      detail.body.payload,
      JSON.parse(received.raw_body).payload,
      'the event payload is the payload that was sent',
    );
  });

  it('the sink stores a verified delivery under the program its event belongs to; the listing pages and filters', async () => {
    const tenant = await createTenant(t);
    const secret = await setEndpoint(t, tenant.tenantId, `${baseUrl}${SINK}`);
    const first = await outboxEvent(tenant.tenantId);
    const second = await outboxEvent(tenant.tenantId);

    const a = await post(delivery(first, [secret]));
    assert.equal(a.status, 200, a.raw);
    assert.equal(a.body.received, true);
    assert.equal(a.body.signature_verified, true);
    const retry = await post(delivery(first, [secret], { attempt: 2 }));
    assert.equal(retry.status, 200, retry.raw);
    // Any content type: the sink verifies the bytes, whatever they claim to be.
    const plain = delivery(second, [secret]);
    const b = await post({ headers: { ...plain.headers, 'content-type': 'text/plain' }, body: plain.body });
    assert.equal(b.status, 200, b.raw);

    const list = await tenant.api.get('/v1/sandbox/webhooks?limit=2');
    assert.deepEqual(
      list.body.data.map((r: any) => [r.event_id, JSON.parse(r.raw_body).attempt, r.signature_verified]),
      [
        [second.id, 1, true],
        [first.id, 2, true],
      ],
    );
    assert.equal(list.body.has_more, true);
    const next = await tenant.api.get(`/v1/sandbox/webhooks?limit=2&cursor=${list.body.next_cursor}`);
    assert.deepEqual(
      next.body.data.map((r: any) => [r.event_id, r.raw_body]),
      [[first.id, delivery(first, [secret]).body]],
    );
    assert.equal(next.body.has_more, false);
    const byEvent = await tenant.api.get(`/v1/sandbox/webhooks?eventId=${first.id}`);
    assert.equal(byEvent.body.data.length, 2);

    const other = await createTenant(t);
    assert.deepEqual((await other.api.get('/v1/sandbox/webhooks')).body.data, [], 'another tenant sees none of it');
    assertEnvelope(assert, await tenant.api.get('/v1/sandbox/webhooks?cursor=abc'), 400, 'validation_failed');
    const noScope = await createTenant(t, { scopes: ['payments:read'] });
    assertEnvelope(assert, await noScope.api.get('/v1/sandbox/webhooks'), 403, 'scope_missing');
    assertEnvelope(assert, await client(t.app).get('/v1/sandbox/webhooks'), 401, 'api_key_missing');
  });

  it('refuses forged, tampered, stale and unattributable deliveries with one answer, and stores none of them', async () => {
    const victim = await createTenant(t);
    const secret = await setEndpoint(t, victim.tenantId, `${baseUrl}${SINK}`);
    const event = await outboxEvent(victim.tenantId);
    const noEndpoint = await createTenant(t);
    const orphan = await outboxEvent(noEndpoint.tenantId);
    const before = await receiptCount(t.db);

    const genuine = delivery(event, [secret]);
    const tampered = delivery(event, [secret]);
    tampered.body = tampered.body.replace('"amount":"5000000"', '"amount":"9000000"');
    const unknownId = String(BigInt(event.id) + 100_000n);
    const forgedUnknown = delivery({ id: unknownId, payloadText: event.payloadText }, [
      'whsec_guessed0000000000000000000000000000',
    ]);
    const stale = delivery(event, [secret], { timestampMs: clock.now().getTime() - 301_000 });
    const future = delivery(event, [secret], { timestampMs: clock.now().getTime() + 301_000 });
    // A correct signature over a body that is another event's: the header names one event, the body another.
    const otherBody = deliveryBody({
      id: orphan.id,
      eventType: 'payment.settled',
      attempt: 1,
      payloadText: event.payloadText,
    });
    const mismatched = { headers: { ...delivery(event, [secret]).headers }, body: otherBody };
    mismatched.headers['x-signature'] = deliveryHeaders({
      eventId: event.id,
      eventType: 'payment.settled',
      attempt: 1,
      body: otherBody,
      timestampMs: clock.now().getTime(),
      secrets: [secret],
    })['x-signature']!;
    const withoutHeader = (name: string) => {
      const headers: Record<string, string> = { ...genuine.headers };
      delete headers[name];
      return { headers, body: genuine.body };
    };

    const refusals: Array<[string, { headers: Record<string, string>; body: string | Buffer }]> = [
      ['guessed existing event id, wrong secret', delivery(event, ['whsec_guessed0000000000000000000000000000'])],
      ['guessed unknown event id', forgedUnknown],
      ['tampered body', tampered],
      ['timestamp 5 minutes and 1 second old', stale],
      ['timestamp 5 minutes and 1 second ahead', future],
      ['body of another event', mismatched],
      ['no x-event-id', withoutHeader('x-event-id')],
      ['no x-signature', withoutHeader('x-signature')],
      ['no x-timestamp', withoutHeader('x-timestamp')],
      ['malformed x-event-id', { headers: { ...genuine.headers, 'x-event-id': `0${event.id}` }, body: genuine.body }],
      ['non-numeric x-event-id', { headers: { ...genuine.headers, 'x-event-id': 'abc' }, body: genuine.body }],
      ['event of a tenant without an endpoint', delivery(orphan, [secret])],
      ['empty body', { headers: genuine.headers, body: '' }],
      ['not JSON', { headers: genuine.headers, body: 'not json' }],
    ];
    const answers: string[] = [];
    for (const [what, request] of refusals) {
      const response = await post(request);
      assert.equal(response.status, 401, `${what}: ${response.raw}`);
      assertRefused(response);
      answers.push(JSON.stringify({ ...response.body.error, request_id: undefined }));
    }
    assert.equal(
      new Set(answers).size,
      1,
      'every refusal reads the same: it tells nothing about which events or tenants exist',
    );
    assert.equal(await receiptCount(t.db), before, 'nothing stored');
    assert.deepEqual((await victim.api.get('/v1/sandbox/webhooks')).body.data, []);

    // The genuine delivery of the same event still goes through.
    assert.equal((await post(genuine)).status, 200);
  });

  it('an event of a live program is refused even when signed with its live secret', async () => {
    const tenant = await createTenant(t);
    const testSecret = await setEndpoint(t, tenant.tenantId, `${baseUrl}${SINK}`);
    const liveSecret = await setEndpoint(t, tenant.tenantId, 'https://93.184.216.34/hook', 'live');
    const liveEvent = await outboxEvent(tenant.tenantId, 'live');
    const before = await receiptCount(t.db);

    for (const secrets of [[liveSecret], [testSecret], [liveSecret, testSecret]]) {
      const response = await post(delivery(liveEvent, secrets));
      assertRefused(response);
    }
    const liveQuery = await post(delivery(liveEvent, [liveSecret]), `?tenant=${tenant.tenantId}&mode=live`);
    assertRefused(liveQuery);
    assert.equal(await receiptCount(t.db), before, 'nothing stored');

    const liveKey = await client(t.app, t.platformKey).post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, {
      mode: 'live',
    });
    assert.deepEqual((await client(t.app, liveKey.body.key).get('/v1/sandbox/webhooks')).body.data, []);
    assert.deepEqual((await tenant.api.get('/v1/sandbox/webhooks')).body.data, []);
  });

  it('the former ?tenant=…&mode=… query is accepted and ignored: the event names the program', async () => {
    const owner = await createTenant(t);
    const secret = await setEndpoint(t, owner.tenantId, `${baseUrl}${SINK}?tenant=${owner.tenantId}&mode=test`);
    const target = await createTenant(t);
    const targetLive = await client(t.app, t.platformKey).post(`/v1/admin/tenants/${target.tenantId}/api-keys`, {
      mode: 'live',
    });
    const event = await outboxEvent(owner.tenantId);

    for (const query of [
      `?tenant=${target.tenantId}&mode=live`,
      `?tenant=${target.tenantId}`,
      '?tenant=nope&mode=whatever',
      `?tenant=${owner.tenantId}&mode=test`,
    ]) {
      const response = await post(delivery(event, [secret]), query);
      assert.equal(response.status, 200, `${query}: ${response.raw}`);
    }
    assert.equal(
      (await owner.api.get(`/v1/sandbox/webhooks?eventId=${event.id}`)).body.data.length,
      4,
      "stored in the event's own program",
    );
    assert.deepEqual((await target.api.get('/v1/sandbox/webhooks')).body.data, [], 'not in the tenant the query named');
    assert.deepEqual((await client(t.app, targetLive.body.key).get('/v1/sandbox/webhooks')).body.data, []);
    // A forged delivery gets the same answer whatever tenant the query names, existing or not.
    const forged = delivery(event, ['whsec_guessed0000000000000000000000000000']);
    const named = await post(forged, `?tenant=${target.tenantId}&mode=test`);
    const unknown = await post(forged, '?tenant=00000000-0000-4000-8000-00000000abcd&mode=test');
    assertRefused(named);
    assertRefused(unknown);
    assert.equal(named.body.error.message, unknown.body.error.message);
  });

  it('a body PostgreSQL text cannot hold (NUL bytes, invalid UTF-8) is refused with 401, never 500, without reaching the database', async () => {
    const tenant = await createTenant(t);
    const secret = await setEndpoint(t, tenant.tenantId, `${baseUrl}${SINK}`);
    const event = await outboxEvent(tenant.tenantId);
    const before = await receiptCount(t.db);
    const genuine = delivery(event, [secret]).body;
    const bodies: Array<[string, Buffer]> = [
      ['NUL bytes', Buffer.from(genuine.replace('"attempt":1', '"attempt":1,"x":"a\u0000b"'), 'utf8')],
      ['only NUL bytes', Buffer.alloc(16)],
      [
        'invalid UTF-8',
        Buffer.concat([Buffer.from(genuine.slice(0, -2), 'utf8'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('}}')]),
      ],
      [
        'a lone surrogate encoded as UTF-8',
        Buffer.concat([Buffer.from(`{"id":"${event.id}","x":"`), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]),
      ],
    ];

    // Correctly signed with the program's secret: only the bytes are wrong.
    const ts = String(clock.now().getTime());
    const signedOver = (body: Buffer) => ({
      'content-type': 'application/json',
      'x-event-id': event.id,
      'x-timestamp': ts,
      'x-signature': signatureHeader(secret, ts, body),
    });
    const queries: string[] = [];
    const db = t.db as any;
    const original = { query: db.query, transaction: db.transaction };
    db.query = (sql: string, params?: unknown[]) => (queries.push(sql), original.query.call(db, sql, params));
    db.transaction = (...args: unknown[]) => (queries.push('transaction'), original.transaction.apply(db, args));
    try {
      for (const [what, body] of bodies) {
        const response = await post({ headers: signedOver(body), body });
        assert.equal(response.status, 401, `${what}: ${response.raw}`);
        assertRefused(response);
      }
    } finally {
      db.query = original.query;
      db.transaction = original.transaction;
    }
    assert.deepEqual(queries, [], 'no database round trip for a body it could never store');
    assert.equal(await receiptCount(t.db), before);
  });

  it('during a rotation a delivery signed with the previous secret still verifies, until the overlap ends', async () => {
    const tenant = await createTenant(t);
    const oldSecret = await setEndpoint(t, tenant.tenantId, `${baseUrl}${SINK}`);
    const rotated = await client(t.app, t.platformKey).post(
      `/v1/admin/tenants/${tenant.tenantId}/webhook-endpoint/rotate-secret`,
      { mode: 'test' },
    );
    assert.equal(rotated.status, 200, rotated.raw);
    const newSecret: string = rotated.body.secret;
    const event = await outboxEvent(tenant.tenantId);

    assert.equal((await post(delivery(event, [oldSecret]))).status, 200, 'the previous secret alone');
    assert.equal((await post(delivery(event, [newSecret]))).status, 200, 'the new secret alone');
    assert.equal(
      (await post(delivery(event, [newSecret, oldSecret]))).status,
      200,
      'both, as the dispatcher signs during the overlap',
    );

    clock.advance(new Date(rotated.body.previousSecretExpiresAt).getTime() - clock.now().getTime() + 1);
    assertRefused(await post(delivery(event, [oldSecret])));
    assert.equal((await post(delivery(event, [newSecret]))).status, 200);
    const stored = await tenant.api.get('/v1/sandbox/webhooks');
    assert.equal(stored.body.data.length, 4);
    assert.ok(stored.body.data.every((r: any) => r.signature_verified === true && r.event_id === event.id));
  });

  it('the failing receiver always answers 500: the attempt fails and is retried', async () => {
    const tenant = await fundedTenant(t);
    await setEndpoint(t, tenant.tenantId, `${baseUrl}/v1/sandbox/webhooks/failing`);
    const direct = await client(t.app).post('/v1/sandbox/webhooks/failing', { anything: true });
    assert.equal(direct.status, 500);
    assert.equal(direct.body.error.code, 'sandbox_receiver_failure');

    const response = await payout(tenant.api, { beneficiary: beneficiary('V99990004') });
    const [event] = await eventsOfPayment(t.db, tenant.tenantId, response.body.id);
    const d = dispatcherFor(t.db, clock);
    await d.dispatchDue();
    clock.advance(5000);
    await d.dispatchDue();
    await d.close();
    const deliveries = await deliveryRows(t.db, event.id);
    assert.deepEqual(
      deliveries.map((x: any) => [x.attempt, x.status_code, x.ok, x.error]),
      [
        [1, 500, false, 'HTTP 500'],
        [2, 500, false, 'HTTP 500'],
      ],
    );
    const read = await tenant.api.get(`/v1/events/${event.id}`);
    assert.equal(read.body.status, 'pending');
    assert.equal(read.body.attempts, 2);
    assert.equal(read.body.last_error, 'HTTP 500');
  });
});
