import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../support/clock.ts';
import { PLATFORM_TENANT_ID } from '../../src/services/bootstrap.ts';
import { assertEnvelope, client, createTenant, startTestApp, type Client, type TestApp } from '../support/harness.ts';
import { AMPLE_RAIL_TIMEOUT_MS, beneficiary, type FundedTenant, fundedTenant, payout } from '../support/payouts.ts';
import { answer, dispatcherFor, setEndpoint, TestReceiver } from '../support/webhooks.ts';

const RECORD_KEYS = [
  'aggregate_id',
  'aggregate_type',
  'attempts',
  'created_at',
  'dead_at',
  'event_type',
  'id',
  'last_error',
  'next_attempt_at',
  'published_at',
  'status',
];

describe('events API', () => {
  let t: TestApp;
  let clock: ManualClock;
  let tenant: FundedTenant;
  let other: FundedTenant;
  let receiver: TestReceiver;
  let admin: Client;
  const ids = { published: [] as string[], dead: [] as string[], pending: '' };

  before(async () => {
    clock = new ManualClock(new Date());
    t = await startTestApp({ clock, env: { SANDBOX_RAIL_TIMEOUT_MS: String(AMPLE_RAIL_TIMEOUT_MS) } });
    admin = client(t.app, t.platformKey);
    tenant = await fundedTenant(t);
    other = await fundedTenant(t);
    // settled events are accepted, failed ones refused: with no backoff the failed ones go dead.
    receiver = await TestReceiver.start((request, response) =>
      answer(request.body.eventType === 'payment.settled' ? 200 : 500)(request, response),
    );
    await setEndpoint(t, tenant.tenantId, receiver.url());
    for (const id of ['V99990001', 'V99990004', 'V99990001', 'V99990005', 'V99990001']) {
      const response = await payout(tenant.api, { beneficiary: beneficiary(id) });
      assert.ok(['settled', 'failed'].includes(response.body.status), response.raw);
    }
    const d = dispatcherFor(t.db, clock, { backoffScale: 0 });
    await d.dispatchDue();
    await d.close();
    await payout(tenant.api, { beneficiary: beneficiary('V99990004') }); // stays pending: not dispatched
    await payout(other.api, { beneficiary: beneficiary('V99990001') });
    const { rows } = await t.db.query<{ id: bigint; status: string }>(
      `SELECT id, status FROM outbox_events WHERE tenant_id = $1 ORDER BY id`,
      [tenant.tenantId],
    );
    for (const row of rows) {
      if (row.status === 'published') ids.published.push(row.id.toString());
      else if (row.status === 'dead') ids.dead.push(row.id.toString());
      else ids.pending = row.id.toString();
    }
    assert.equal(ids.published.length, 3);
    assert.equal(ids.dead.length, 2);
    assert.ok(ids.pending);
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  it("GET /v1/events lists the tenant's events newest first, as records without payload", async () => {
    const list = await tenant.api.get('/v1/events');
    assert.equal(list.status, 200, list.raw);
    assert.deepEqual(Object.keys(list.body).sort(), ['data', 'has_more', 'next_cursor']);
    assert.equal(list.body.has_more, false);
    assert.equal(list.body.next_cursor, null);
    const all = [...ids.published, ...ids.dead, ids.pending]
      .map(BigInt)
      .sort((a, b) => (a < b ? 1 : -1))
      .map(String);
    assert.deepEqual(
      list.body.data.map((e: any) => e.id),
      all,
    );
    for (const event of list.body.data) {
      assert.deepEqual(Object.keys(event).sort(), RECORD_KEYS);
      assert.equal(typeof event.id, 'string');
      assert.equal(event.aggregate_type, 'payment');
      assert.match(event.aggregate_id, /^[0-9a-f-]{36}$/);
      assert.ok(!Number.isNaN(Date.parse(event.created_at)));
    }
    const published = list.body.data.find((e: any) => e.id === ids.published[0]);
    assert.equal(published.status, 'published');
    assert.equal(published.event_type, 'payment.settled');
    assert.equal(published.attempts, 1);
    assert.equal(published.next_attempt_at, null);
    assert.equal(published.published_at, clock.now().toISOString());
    assert.equal(published.dead_at, null);
    const dead = list.body.data.find((e: any) => e.id === ids.dead[0]);
    assert.equal(dead.status, 'dead');
    assert.equal(dead.event_type, 'payment.failed');
    assert.equal(dead.attempts, 12);
    assert.equal(dead.last_error, 'HTTP 500');
    assert.equal(dead.next_attempt_at, null);
    assert.ok(dead.dead_at);
    const pending = list.body.data.find((e: any) => e.id === ids.pending);
    assert.equal(pending.status, 'pending');
    assert.equal(pending.attempts, 0);
    assert.equal(pending.next_attempt_at, clock.now().toISOString());
  });

  it('filters by status and eventType, together or apart', async () => {
    const dead = await tenant.api.get('/v1/events?status=dead');
    assert.deepEqual(
      dead.body.data.map((e: any) => e.id),
      [...ids.dead].reverse(),
    );
    const failed = await tenant.api.get('/v1/events?eventType=payment.failed');
    assert.deepEqual(
      failed.body.data.map((e: any) => e.id),
      [ids.pending, ...[...ids.dead].reverse()],
    );
    const both = await tenant.api.get('/v1/events?status=published&eventType=payment.failed');
    assert.deepEqual(both.body.data, []);
    const reversed = await tenant.api.get('/v1/events?eventType=payment.reversed');
    assert.deepEqual(reversed.body.data, []);
    assertEnvelope(assert, await tenant.api.get('/v1/events?status=delivered'), 400, 'validation_failed');
    assertEnvelope(assert, await tenant.api.get('/v1/events?eventType=payment.created'), 400, 'validation_failed');
  });

  it('pages with the numeric id cursor: no event skipped or repeated', async () => {
    const seen: string[] = [];
    let url = '/v1/events?limit=2';
    for (let page = 0; page < 10; page += 1) {
      const response = await tenant.api.get(url);
      assert.equal(response.status, 200, response.raw);
      assert.ok(response.body.data.length <= 2);
      seen.push(...response.body.data.map((e: any) => e.id));
      if (!response.body.has_more) {
        assert.equal(response.body.next_cursor, null);
        break;
      }
      assert.equal(response.body.next_cursor, response.body.data.at(-1).id, 'the cursor is the last id of the page');
      url = `/v1/events?limit=2&cursor=${response.body.next_cursor}`;
    }
    const all = (await tenant.api.get('/v1/events?limit=100')).body.data.map((e: any) => e.id);
    assert.deepEqual(seen, all);
    const filtered = await tenant.api.get(`/v1/events?status=dead&limit=1`);
    assert.equal(filtered.body.has_more, true);
    const rest = await tenant.api.get(`/v1/events?status=dead&limit=1&cursor=${filtered.body.next_cursor}`);
    assert.deepEqual(
      rest.body.data.map((e: any) => e.id),
      [ids.dead[0]],
    );
    assert.equal(rest.body.has_more, false);
  });

  it('rejects a non-numeric cursor, and limits outside 1..100, with validation_failed', async () => {
    for (const query of [
      'cursor=abc',
      'cursor=-1',
      'cursor=1.5',
      `cursor=${encodeURIComponent('eyJrIjoxfQ')}`,
      'cursor=9999999999999999999',
      'cursor=123456789012345678901',
      'limit=0',
      'limit=101',
      'limit=x',
    ]) {
      const response = await tenant.api.get(`/v1/events?${query}`);
      assertEnvelope(assert, response, 400, 'validation_failed');
      assert.ok(Array.isArray(response.body.error.meta.errors), query);
      assert.equal(response.body.error.meta.errors[0].field, query.split('=')[0], query);
    }
  });

  it('GET /v1/events/{id} adds the payload exactly as sent and every delivery', async () => {
    const id = ids.dead[0]!;
    const response = await tenant.api.get(`/v1/events/${id}`);
    assert.equal(response.status, 200, response.raw);
    assert.deepEqual(Object.keys(response.body).sort(), [...RECORD_KEYS, 'deliveries', 'payload'].sort());
    const sent = receiver.requests.find((r) => r.headers['x-event-id'] === id)!;
    assert.deepEqual(response.body.payload, sent.body.payload);
    assert.equal(
      JSON.stringify(response.body.payload),
      JSON.stringify(sent.body.payload),
      'same keys in the same order',
    );
    assert.deepEqual(Object.keys(response.body.payload).sort(), [
      'amount',
      'asset',
      'metadata',
      'method',
      'paymentId',
      'reason',
    ]);
    assert.deepEqual(response.body.payload.metadata, {}, 'a payout sent without metadata');
    assert.equal(response.body.deliveries.length, 12);
    assert.deepEqual(
      response.body.deliveries.map((d: any) => d.attempt),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    );
    for (const delivery of response.body.deliveries) {
      assert.deepEqual(Object.keys(delivery).sort(), ['attempt', 'duration_ms', 'error', 'ok', 'status_code']);
      assert.deepEqual([delivery.status_code, delivery.ok, delivery.error], [500, false, 'HTTP 500']);
      assert.ok(Number.isInteger(delivery.duration_ms) && delivery.duration_ms >= 0);
    }
    const published = await tenant.api.get(`/v1/events/${ids.published[0]}`);
    assert.deepEqual(
      published.body.deliveries.map((d: any) => [d.attempt, d.status_code, d.ok, d.error]),
      [[1, 200, true, null]],
    );
    const pending = await tenant.api.get(`/v1/events/${ids.pending}`);
    assert.deepEqual(pending.body.deliveries, []);
    assert.equal(pending.body.payload.reason, 'beneficiary_mismatch');
  });

  it("a non-numeric id is 400; an unknown id, another tenant's, or another mode's is 404", async () => {
    for (const bad of ['abc', '12a', '-1', '1.0', '3f1e8d2a-5b7c-4e9f-8a1d-2c3b4a5d6e7f']) {
      assertEnvelope(assert, await tenant.api.get(`/v1/events/${bad}`), 400, 'validation_failed');
      assertEnvelope(assert, await tenant.api.post(`/v1/events/${bad}/retry`), 400, 'validation_failed');
    }
    const othersEvent = (await other.api.get('/v1/events')).body.data[0].id;
    for (const missing of ['999999999', '9999999999999999999', othersEvent]) {
      assertEnvelope(assert, await tenant.api.get(`/v1/events/${missing}`), 404, 'resource_not_found');
      assertEnvelope(assert, await tenant.api.post(`/v1/events/${missing}/retry`), 404, 'resource_not_found');
    }
    const liveKey = await admin.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, { mode: 'live' });
    const live = client(t.app, liveKey.body.key);
    assertEnvelope(assert, await live.get(`/v1/events/${ids.published[0]}`), 404, 'resource_not_found');
    assert.deepEqual((await live.get('/v1/events')).body.data, []);
    assert.deepEqual((await live.post('/v1/events/retry-dead')).body, { requeued: 0 });
  });

  it('another tenant sees only its own events', async () => {
    const list = await other.api.get('/v1/events');
    assert.equal(list.body.data.length, 1);
    const mine = new Set([...ids.published, ...ids.dead, ids.pending]);
    assert.ok(!mine.has(list.body.data[0].id));
  });

  it('scopes: events:read to read, events:write to requeue', async () => {
    const reader = client(
      t.app,
      (await admin.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, { mode: 'test', scopes: ['events:read'] }))
        .body.key,
    );
    const writer = client(
      t.app,
      (await admin.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, { mode: 'test', scopes: ['events:write'] }))
        .body.key,
    );
    const neither = client(
      t.app,
      (await admin.post(`/v1/admin/tenants/${tenant.tenantId}/api-keys`, { mode: 'test', scopes: ['payments:read'] }))
        .body.key,
    );
    assert.equal((await reader.get('/v1/events')).status, 200);
    assert.equal((await reader.get(`/v1/events/${ids.published[0]}`)).status, 200);
    for (const call of [
      () => reader.post(`/v1/events/${ids.pending}/retry`),
      () => reader.post('/v1/events/retry-dead'),
    ]) {
      const response = await call();
      assertEnvelope(assert, response, 403, 'scope_missing');
      assert.deepEqual(response.body.error.meta.required, ['events:write']);
    }
    for (const call of [
      () => writer.get('/v1/events'),
      () => writer.get(`/v1/events/${ids.published[0]}`),
      () => neither.get('/v1/events'),
    ]) {
      const response = await call();
      assertEnvelope(assert, response, 403, 'scope_missing');
      assert.deepEqual(response.body.error.meta.required, ['events:read']);
    }
    assert.equal((await writer.post(`/v1/events/${ids.pending}/retry`)).status, 200);
    assertEnvelope(assert, await client(t.app).get('/v1/events'), 401, 'api_key_missing');
    assertEnvelope(assert, await client(t.app, 'bsk_test_nope').post('/v1/events/retry-dead'), 401, 'api_key_invalid');
  });

  it('POST /v1/events/{id}/retry: requeues dead and published events; an already due pending one is left as is', async () => {
    const pending = await tenant.api.post(`/v1/events/${ids.pending}/retry`);
    assert.equal(pending.status, 200, pending.raw);
    assert.deepEqual(pending.body, {
      id: ids.pending,
      event_type: 'payment.failed',
      status: 'pending',
      attempts: 0,
      requeued: false,
    });

    clock.advance(1000);
    const dead = await tenant.api.post(`/v1/events/${ids.dead[1]}/retry`);
    assert.deepEqual(dead.body, {
      id: ids.dead[1],
      event_type: 'payment.failed',
      status: 'pending',
      attempts: 12,
      requeued: true,
    });
    const read = (await tenant.api.get(`/v1/events/${ids.dead[1]}`)).body;
    assert.equal(read.status, 'pending');
    assert.equal(read.dead_at, null);
    assert.equal(read.next_attempt_at, clock.now().toISOString());

    const published = await tenant.api.post(`/v1/events/${ids.published[2]}/retry`);
    assert.deepEqual(published.body, {
      id: ids.published[2],
      event_type: 'payment.settled',
      status: 'pending',
      attempts: 1,
      requeued: true,
    });
    const again = await tenant.api.post(`/v1/events/${ids.published[2]}/retry`, undefined, {
      'content-type': 'application/json',
    });
    assert.equal(again.status, 200, again.raw);
    assert.equal(again.body.requeued, false, 'already pending and due');
  });

  it("POST /v1/events/retry-dead requeues only this program's failed queue", async () => {
    const first = await tenant.api.post('/v1/events/retry-dead');
    assert.equal(first.status, 200, first.raw);
    assert.deepEqual(first.body, { requeued: 1 });
    assert.deepEqual((await tenant.api.get('/v1/events?status=dead')).body.data, []);
    assert.deepEqual((await tenant.api.post('/v1/events/retry-dead')).body, { requeued: 0 });
    assert.deepEqual((await other.api.post('/v1/events/retry-dead')).body, { requeued: 0 });
  });
});

describe('admin: webhook endpoint and secret rotation', () => {
  let t: TestApp;
  let clock: ManualClock;
  let admin: Client;
  before(async () => {
    clock = new ManualClock(new Date('2026-03-01T12:00:00.000Z'));
    t = await startTestApp({ clock });
    admin = client(t.app, t.platformKey);
  });
  after(async () => {
    await t.close();
  });

  it('PUT creates the endpoint with a whsec_ secret; changing the URL keeps the secret', async () => {
    const { tenantId } = await createTenant(t);
    const created = await admin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, {
      mode: 'test',
      url: 'HTTPS://Hooks.Example.COM/bolivar',
    });
    assert.equal(created.status, 200, created.raw);
    assert.deepEqual(Object.keys(created.body).sort(), ['secret', 'url']);
    assert.equal(created.body.url, 'https://hooks.example.com/bolivar');
    assert.match(created.body.secret, /^whsec_[0-9A-Za-z]{32,}$/);
    const moved = await admin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, {
      mode: 'test',
      url: 'http://127.0.0.1:8080/hook',
    });
    assert.deepEqual(moved.body, { url: 'http://127.0.0.1:8080/hook', secret: created.body.secret });
    const live = await admin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, {
      mode: 'live',
      url: 'https://93.184.216.34/hook',
    });
    assert.equal(live.status, 200, live.raw);
    assert.notEqual(live.body.secret, created.body.secret, 'each mode is its own program with its own secret');
  });

  it('rotation returns a new secret and when the old one stops signing; PUT then shows the new one', async () => {
    const { tenantId } = await createTenant(t);
    assertEnvelope(
      assert,
      await admin.post(`/v1/admin/tenants/${tenantId}/webhook-endpoint/rotate-secret`, { mode: 'test' }),
      404,
      'resource_not_found',
    );
    const created = await admin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, {
      mode: 'test',
      url: 'http://localhost:9999/hook',
    });
    const rotated = await admin.post(`/v1/admin/tenants/${tenantId}/webhook-endpoint/rotate-secret`, { mode: 'test' });
    assert.equal(rotated.status, 200, rotated.raw);
    assert.deepEqual(Object.keys(rotated.body).sort(), ['previousSecretExpiresAt', 'secret']);
    assert.match(rotated.body.secret, /^whsec_[0-9A-Za-z]{32,}$/);
    assert.notEqual(rotated.body.secret, created.body.secret);
    assert.equal(rotated.body.previousSecretExpiresAt, '2026-03-02T12:00:00.000Z');
    const read = await admin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, {
      mode: 'test',
      url: 'http://localhost:9999/hook',
    });
    assert.equal(read.body.secret, rotated.body.secret);
    assertEnvelope(
      assert,
      await admin.post(`/v1/admin/tenants/${tenantId}/webhook-endpoint/rotate-secret`, { mode: 'live' }),
      404,
      'resource_not_found',
    );
    assertEnvelope(
      assert,
      await admin.post(`/v1/admin/tenants/${tenantId}/webhook-endpoint/rotate-secret`, {}),
      400,
      'validation_failed',
    );
  });

  it('live mode refuses loopback, private, link-local, CGNAT and metadata destinations; test mode allows loopback', async () => {
    const { tenantId } = await createTenant(t);
    const refused = [
      'http://127.0.0.1/hook',
      'http://127.1.2.3:8080/x',
      'http://localhost/hook',
      'http://app.localhost/x',
      'http://10.0.0.5/x',
      'http://172.16.3.4/x',
      'http://172.31.255.255/x',
      'http://192.168.1.10/x',
      'http://169.254.169.254/latest/meta-data',
      'http://100.64.0.1/x',
      'http://100.100.100.200/x',
      'http://0.0.0.0/x',
      'http://[::1]/x',
      'http://[fd00::1]/x',
      'http://[fe80::1]/x',
      'http://[::ffff:127.0.0.1]/x',
      'http://[::ffff:a9fe:a9fe]/x',
      'http://2130706433/x',
      'http://0x7f.0.0.1/x',
      'http://metadata.google.internal/x',
      'http://intranet/x',
    ];
    for (const url of refused) {
      const response = await admin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, { mode: 'live', url });
      assertEnvelope(assert, response, 400, 'validation_failed');
      assert.equal(response.body.error.meta.errors[0].field, 'url', url);
    }
    for (const url of [
      'http://127.0.0.1:3000/v1/sandbox/webhooks/sink',
      'http://localhost/hook',
      'http://[::1]:4000/x',
      'https://8.8.8.8/hook',
    ]) {
      const response = await admin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, { mode: 'test', url });
      assert.equal(response.status, 200, `${url}: ${response.raw}`);
    }
    for (const url of [
      'https://8.8.8.8/hook',
      'https://[2606:4700:4700::1111]/hook',
      'http://172.32.0.1/x',
      'http://100.128.0.1/x',
    ]) {
      const response = await admin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, { mode: 'live', url });
      assert.equal(response.status, 200, `${url}: ${response.raw}`);
    }
  });

  it('test mode refuses private, link-local, CGNAT and metadata destinations (loopback stays allowed), naming url', async () => {
    const { tenantId } = await createTenant(t);
    const refused = [
      'http://10.0.0.5/x',
      'http://172.16.3.4/x',
      'http://172.31.255.255/x',
      'http://192.168.1.10/x',
      'http://100.64.0.1/x',
      'http://100.127.255.254/x',
      'http://169.254.169.254/latest/meta-data',
      'http://169.254.170.2/v2/credentials',
      'http://100.100.100.200/latest',
      'http://[fe80::1]/x',
      'http://[fd00:ec2::254]/x',
      'http://[fc00::1]/x',
      'http://[::ffff:10.0.0.1]/x',
      'http://[::ffff:a9fe:a9fe]/x',
      'http://0.0.0.0/x',
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://metadata/x',
      'http://instance-data/latest/meta-data',
    ];
    for (const url of refused) {
      const response = await admin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, { mode: 'test', url });
      assertEnvelope(assert, response, 400, 'validation_failed');
      assert.equal(response.body.error.meta.errors[0].field, 'url', url);
      assert.match(
        response.body.error.meta.errors[0].message,
        /private, link-local or metadata address|metadata service/,
        url,
      );
    }
    // Nothing was stored: the program still has no endpoint.
    assertEnvelope(
      assert,
      await admin.post(`/v1/admin/tenants/${tenantId}/webhook-endpoint/rotate-secret`, { mode: 'test' }),
      404,
      'resource_not_found',
    );
  });

  it("test mode accepts this service's own origin (PUBLIC_BASE_URL, where the sink is) even on a private address", async () => {
    const own = await startTestApp({ env: { PUBLIC_BASE_URL: 'http://10.0.0.5:3000' } });
    try {
      const ownAdmin = client(own.app, own.platformKey);
      const { tenantId } = await createTenant(own);
      const sink = await ownAdmin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, {
        mode: 'test',
        url: 'http://10.0.0.5:3000/v1/sandbox/webhooks/sink',
      });
      assert.equal(sink.status, 200, sink.raw);
      assert.equal(sink.body.url, 'http://10.0.0.5:3000/v1/sandbox/webhooks/sink');
      for (const [mode, url] of [
        ['test', 'http://10.0.0.5:3001/x'],
        ['test', 'http://10.0.0.6:3000/x'],
        ['live', 'http://10.0.0.5:3000/v1/sandbox/webhooks/sink'],
      ]) {
        assertEnvelope(
          assert,
          await ownAdmin.put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, { mode, url }),
          400,
          'validation_failed',
        );
      }
    } finally {
      await own.close();
    }
  });

  it('only absolute http(s) URLs; unknown tenants 404; customer keys 403', async () => {
    const tenant = await createTenant(t);
    for (const url of [
      'ftp://example.com/x',
      'not a url',
      '/relative',
      'https://example.com/x#frag',
      'javascript:alert(1)',
      '',
      `https://example.com/${'a'.repeat(2050)}`,
    ]) {
      const response = await admin.put(`/v1/admin/tenants/${tenant.tenantId}/webhook-endpoint`, { mode: 'test', url });
      assertEnvelope(assert, response, 400, 'validation_failed');
      assert.equal(response.body.error.meta.errors[0].field, 'url', url);
    }
    assertEnvelope(
      assert,
      await admin.put(`/v1/admin/tenants/${tenant.tenantId}/webhook-endpoint`, { url: 'https://example.com/x' }),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await admin.put(`/v1/admin/tenants/00000000-0000-4000-8000-00000000dead/webhook-endpoint`, {
        mode: 'test',
        url: 'https://example.com/x',
      }),
      404,
      'resource_not_found',
    );
    assertEnvelope(
      assert,
      await admin.put(`/v1/admin/tenants/${PLATFORM_TENANT_ID}/webhook-endpoint`, {
        mode: 'test',
        url: 'https://example.com/x',
      }),
      404,
      'resource_not_found',
    );
    assertEnvelope(
      assert,
      await admin.put(`/v1/admin/tenants/not-a-uuid/webhook-endpoint`, { mode: 'test', url: 'https://example.com/x' }),
      400,
      'validation_failed',
    );
    assertEnvelope(
      assert,
      await tenant.api.put(`/v1/admin/tenants/${tenant.tenantId}/webhook-endpoint`, {
        mode: 'test',
        url: 'https://example.com/x',
      }),
      403,
      'scope_missing',
    );
    assertEnvelope(
      assert,
      await tenant.api.post(`/v1/admin/tenants/${tenant.tenantId}/webhook-endpoint/rotate-secret`, { mode: 'test' }),
      403,
      'scope_missing',
    );
  });
});
