import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AddressInfo } from 'node:net';
import { findWebhookEndpoint } from '../../src/db/repositories/webhooks.ts';
import { ManualClock } from '../../src/domain/clock.ts';
import { bootstrapIfEmpty } from '../../src/services/bootstrap.ts';
import { signatureHeader } from '../../src/webhooks/verify.ts';
import { bootstrapSteps, sandboxSinkUrl } from '../../src/workers/index.ts';
import { assertEnvelope, client, createTenant, startTestApp, type TestApp } from '../support/harness.ts';
import { beneficiary, fundedTenant, payout } from '../support/payouts.ts';
import { deliveryRows, dispatcherFor, eventsOfPayment, setEndpoint } from '../support/webhooks.ts';

describe('sandbox webhook receivers', () => {
  let t: TestApp;
  let clock: ManualClock;
  let baseUrl: string;
  before(async () => {
    clock = new ManualClock(new Date());
    t = await startTestApp({ clock, env: { SANDBOX_RAIL_TIMEOUT_MS: '300' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await t.close();
  });

  it('the bootstrap points the sandbox tenant at the sink; a payout outcome lands there, verified', async () => {
    const config = { dataDir: mkdtempSync(path.join(tmpdir(), 'bds-sink-')), platformApiKey: t.platformKey, publicBaseUrl: baseUrl, port: 0 };
    const boot = await bootstrapIfEmpty(t.db, config, bootstrapSteps(t.config));
    assert.ok(boot);
    const endpoint = await findWebhookEndpoint(t.db, boot.tenantId, 'test');
    assert.equal(endpoint?.url, sandboxSinkUrl(baseUrl, boot.tenantId));
    assert.match(endpoint!.secret, /^whsec_[0-9A-Za-z]{32,}$/);

    const api = client(t.app, boot.apiKey);
    const response = await payout(api, { beneficiary: beneficiary('V99990001') });
    assert.equal(response.body.status, 'settled', response.raw);
    const d = dispatcherFor(t.db, clock);
    await d.dispatchDue();
    await d.close();
    const [event] = await eventsOfPayment(t.db, boot.tenantId, response.body.id);
    assert.equal(event.status, 'published');

    const list = await api.get('/v1/sandbox/webhooks');
    assert.equal(list.status, 200, list.raw);
    assert.equal(list.body.data.length, 1);
    assert.equal(list.body.has_more, false);
    assert.equal(list.body.next_cursor, null);
    const [received] = list.body.data;
    assert.deepEqual(Object.keys(received).sort(), ['event_id', 'headers', 'id', 'raw_body', 'received_at', 'signature_verified']);
    assert.equal(received.signature_verified, true);
    assert.equal(received.event_id, event.id.toString());
    assert.equal(received.raw_body, `{"id":"${event.id}","eventType":"payment.settled","attempt":1,"payload":${event.payload_text}}`);
    for (const name of ['content-type', 'x-signature', 'x-timestamp', 'x-event-type', 'x-event-id', 'x-delivery-attempt']) {
      assert.equal(typeof received.headers[name], 'string', `${name} stored`);
    }
    assert.equal(received.headers['x-event-id'], event.id.toString());

    const detail = await api.get(`/v1/events/${event.id}`);
    assert.deepEqual(detail.body.payload, JSON.parse(received.raw_body).payload, 'the event payload is the payload that was sent');
  });

  it('the sink stores what it receives and says when the signature does not verify', async () => {
    const tenant = await createTenant(t);
    const secret = await setEndpoint(t, tenant.tenantId, `${baseUrl}/v1/sandbox/webhooks/sink?tenant=${tenant.tenantId}`);
    const sink = client(t.app); // no key: our dispatcher calls it
    const raw = '{"id":"1","eventType":"payment.settled","attempt":1,"payload":{"a":1}}';
    const ts = String(clock.now().getTime());
    const good = await t.app.inject({
      method: 'POST',
      url: `/v1/sandbox/webhooks/sink?tenant=${tenant.tenantId}`,
      headers: { 'content-type': 'application/json', 'x-timestamp': ts, 'x-signature': signatureHeader(secret, ts, raw), 'x-event-id': '1' },
      payload: raw,
    });
    assert.equal(good.statusCode, 200, good.body);
    assert.equal(good.json().signature_verified, true);
    const tampered = await t.app.inject({
      method: 'POST',
      url: `/v1/sandbox/webhooks/sink?tenant=${tenant.tenantId}&mode=test`,
      headers: { 'content-type': 'application/json', 'x-timestamp': ts, 'x-signature': signatureHeader(secret, ts, raw) },
      payload: raw.replace('"a":1', '"a":2'),
    });
    assert.equal(tampered.json().signature_verified, false);
    const stale = await t.app.inject({
      method: 'POST',
      url: `/v1/sandbox/webhooks/sink?tenant=${tenant.tenantId}`,
      headers: { 'content-type': 'text/plain', 'x-timestamp': String(clock.now().getTime() - 600_000), 'x-signature': signatureHeader(secret, clock.now().getTime() - 600_000, 'not json') },
      payload: 'not json',
    });
    assert.equal(stale.statusCode, 200);
    assert.equal(stale.json().signature_verified, false, 'outside the ±5 minute window');

    const list = await tenant.api.get('/v1/sandbox/webhooks?limit=2');
    assert.deepEqual(list.body.data.map((r: any) => [r.raw_body, r.signature_verified]), [['not json', false], [raw.replace('"a":1', '"a":2'), false]]);
    assert.equal(list.body.has_more, true);
    const next = await tenant.api.get(`/v1/sandbox/webhooks?limit=2&cursor=${list.body.next_cursor}`);
    assert.deepEqual(next.body.data.map((r: any) => [r.raw_body, r.signature_verified, r.event_id]), [[raw, true, '1']]);
    assert.equal(next.body.has_more, false);
    const byEvent = await tenant.api.get('/v1/sandbox/webhooks?eventId=1');
    assert.equal(byEvent.body.data.length, 1);

    const other = await createTenant(t);
    assert.deepEqual((await other.api.get('/v1/sandbox/webhooks')).body.data, [], "another tenant sees none of it");
    assertEnvelope(assert, await sink.post('/v1/sandbox/webhooks/sink?tenant=00000000-0000-4000-8000-00000000abcd', {}), 404, 'resource_not_found');
    assertEnvelope(assert, await sink.post('/v1/sandbox/webhooks/sink?tenant=nope', {}), 400, 'validation_failed');
    assertEnvelope(assert, await sink.post('/v1/sandbox/webhooks/sink', {}), 400, 'validation_failed');
    assertEnvelope(assert, await tenant.api.get('/v1/sandbox/webhooks?cursor=abc'), 400, 'validation_failed');
    const noScope = await createTenant(t, { scopes: ['payments:read'] });
    assertEnvelope(assert, await noScope.api.get('/v1/sandbox/webhooks'), 403, 'scope_missing');
    assertEnvelope(assert, await client(t.app).get('/v1/sandbox/webhooks'), 401, 'api_key_missing');
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
    assert.deepEqual(deliveries.map((x: any) => [x.attempt, x.status_code, x.ok, x.error]), [[1, 500, false, 'HTTP 500'], [2, 500, false, 'HTTP 500']]);
    const read = await tenant.api.get(`/v1/events/${event.id}`);
    assert.equal(read.body.status, 'pending');
    assert.equal(read.body.attempts, 2);
    assert.equal(read.body.last_error, 'HTTP 500');
  });
});
