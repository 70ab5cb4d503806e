import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  afterFailure,
  BACKOFF_WAITS_SECONDS,
  checkEndpointUrl,
  deliveryBody,
  deliveryHeaders,
  generateWebhookSecret,
  isPublicAddress,
  signingSecrets,
  WEBHOOK_ATTEMPTS_MAX,
} from '../../src/domain/webhooks.ts';
import { guardedLookup } from '../../src/webhooks/destination.ts';
import { verifyWebhook } from '../../src/webhooks/verify.ts';

describe('webhook delivery rules', () => {
  it('the retry schedule, scaled, then dead after the 12th attempt', () => {
    assert.deepEqual([...BACKOFF_WAITS_SECONDS], [5, 15, 45, 135, 405, 1215, 3645, 10935, 21600, 21600, 21600]);
    assert.equal(WEBHOOK_ATTEMPTS_MAX, 12);
    const waits = [];
    for (let attempt = 1; attempt < 12; attempt += 1) {
      const next = afterFailure(attempt, 1);
      assert.equal(next.status, 'pending');
      waits.push(next.status === 'pending' ? next.waitMs / 1000 : -1);
    }
    assert.deepEqual(waits, [...BACKOFF_WAITS_SECONDS]);
    assert.deepEqual(afterFailure(12, 1), { status: 'dead' });
    assert.deepEqual(afterFailure(13, 1), { status: 'dead' }, 'a manually requeued event that fails again goes back to dead');
    assert.deepEqual(afterFailure(1, 0.01), { status: 'pending', waitMs: 50 });
    assert.deepEqual(afterFailure(11, 0), { status: 'pending', waitMs: 0 });
    assert.throws(() => afterFailure(0, 1), /invariant/);
  });

  it('the body embeds the stored payload text verbatim, id as a string', () => {
    const payloadText = '{"paymentId":"p-1","amount":"9007199254740993","asset":"BS"}';
    const body = deliveryBody({ id: 9007199254740993n, eventType: 'payment.settled', attempt: 3, payloadText });
    assert.equal(body, `{"id":"9007199254740993","eventType":"payment.settled","attempt":3,"payload":${payloadText}}`);
    assert.deepEqual(Object.keys(JSON.parse(body)), ['id', 'eventType', 'attempt', 'payload']);
  });

  it('headers carry the signature of exactly the body bytes', () => {
    const body = deliveryBody({ id: '7', eventType: 'payment.failed', attempt: 1, payloadText: '{"reason":"x"}' });
    const secret = generateWebhookSecret();
    const headers = deliveryHeaders({ eventId: '7', eventType: 'payment.failed', attempt: 1, body, timestampMs: 1000, secrets: [secret] });
    assert.equal(headers['content-type'], 'application/json');
    assert.equal(headers['x-event-id'], '7');
    assert.equal(headers['x-event-type'], 'payment.failed');
    assert.equal(headers['x-delivery-attempt'], '1');
    assert.equal(headers['x-timestamp'], '1000');
    assert.equal(verifyWebhook({ secret, headers, rawBody: body, nowMs: 1000 }).ok, true);
    assert.throws(() => deliveryHeaders({ eventId: '7', eventType: 'x', attempt: 1, body, timestampMs: 1, secrets: [] }), /invariant/);
  });

  it('the previous secret signs only during its overlap window', () => {
    const endpoint = { secret: 'whsec_new', previousSecret: 'whsec_old', previousSecretExpiresAt: new Date(2000) };
    assert.deepEqual(signingSecrets(endpoint, new Date(1999)), ['whsec_new', 'whsec_old']);
    assert.deepEqual(signingSecrets(endpoint, new Date(2000)), ['whsec_new']);
    assert.deepEqual(signingSecrets({ secret: 'whsec_new', previousSecret: null, previousSecretExpiresAt: null }, new Date(0)), ['whsec_new']);
  });

  it('secrets are whsec_ + 40 base62 characters, all different', () => {
    const secrets = new Set(Array.from({ length: 200 }, generateWebhookSecret));
    assert.equal(secrets.size, 200);
    for (const secret of secrets) assert.match(secret, /^whsec_[0-9A-Za-z]{40}$/);
  });

  it('classifies addresses a live endpoint may not reach', () => {
    const forbidden = [
      '127.0.0.1', '127.255.255.254', '0.0.0.0', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.0.1', '169.254.169.254', '100.64.0.1',
      '100.127.255.255', '100.100.100.200', '192.0.0.192', '224.0.0.1', '255.255.255.255', '::', '::1', 'fc00::1', 'fd00:ec2::254', 'fe80::1',
      'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '64:ff9b::a9fe:a9fe', '0:0:0:0:0:ffff:7f00:1', '[::1]', 'not-an-ip', '',
    ];
    for (const address of forbidden) assert.equal(isPublicAddress(address), false, address);
    const allowed = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '2001:4860:4860::8888', '::ffff:8.8.8.8'];
    for (const address of allowed) assert.equal(isPublicAddress(address), true, address);
  });

  it('checks endpoint URLs without the network', () => {
    assert.equal(checkEndpointUrl('https://hooks.example.com/x', 'live').ok, true);
    assert.equal(checkEndpointUrl('http://localhost:3000/x', 'test').ok, true);
    for (const [url, mode] of [
      ['ftp://example.com', 'test'], ['example.com/x', 'test'], ['https://example.com/#a', 'test'], ['http://localhost/x', 'live'],
      ['http://printer.local/x', 'live'], ['http://db.internal/x', 'live'], ['http://[::1]:80/', 'live'], ['http://intranet/x', 'live'],
    ] as const) {
      assert.equal(checkEndpointUrl(url, mode).ok, false, `${mode} ${url}`);
    }
  });

  it('the delivery-time lookup refuses a name if ANY of its addresses is internal (DNS rebinding)', async () => {
    const lookupWith = (addresses: Array<{ address: string; family: number }>) =>
      guardedLookup((_host, callback) => callback(null, addresses));
    const call = (lookup: ReturnType<typeof guardedLookup>, all: boolean) =>
      new Promise<{ error: Error | null; result: unknown }>((resolve) =>
        (lookup as any)('hooks.example.com', { all }, (error: Error | null, address: unknown, family?: number) => resolve({ error, result: all ? address : [address, family] })),
      );
    const publicOnly = lookupWith([{ address: '93.184.216.34', family: 4 }]);
    assert.deepEqual(await call(publicOnly, false), { error: null, result: ['93.184.216.34', 4] });
    assert.deepEqual(await call(publicOnly, true), { error: null, result: [{ address: '93.184.216.34', family: 4 }] });
    const mixed = lookupWith([{ address: '93.184.216.34', family: 4 }, { address: '10.0.0.1', family: 4 }]);
    const refused = await call(mixed, false);
    assert.match(String(refused.error?.message), /not allowed in live mode/);
  });
});
