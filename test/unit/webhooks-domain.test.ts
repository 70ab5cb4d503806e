import assert from 'node:assert/strict';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { describe, it } from 'node:test';
import {
  afterFailure,
  BACKOFF_WAITS_SECONDS,
  checkEndpointUrl,
  deliveryBody,
  deliveryHeaders,
  generateWebhookSecret,
  isPublicAddress,
  mayReachAddress,
  signingSecrets,
  WEBHOOK_ATTEMPTS_MAX,
} from '../../src/domain/webhooks.ts';
import { checkEndpointHost, guardedLookup } from '../../src/webhooks/destination.ts';

const checkLiveHost = (host: string, resolve?: Parameters<typeof checkEndpointHost>[2]) =>
  checkEndpointHost(host, 'live', resolve);
import { verifyWebhook } from '../../sdk/src/webhooks.ts';

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
    assert.deepEqual(
      afterFailure(13, 1),
      { status: 'dead' },
      'a manually requeued event that fails again goes back to dead',
    );
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
    const headers = deliveryHeaders({
      eventId: '7',
      eventType: 'payment.failed',
      attempt: 1,
      body,
      timestampMs: 1000,
      secrets: [secret],
    });
    assert.equal(headers['content-type'], 'application/json');
    assert.equal(headers['x-event-id'], '7');
    assert.equal(headers['x-event-type'], 'payment.failed');
    assert.equal(headers['x-delivery-attempt'], '1');
    assert.equal(headers['x-timestamp'], '1000');
    assert.equal(verifyWebhook({ secret, headers, rawBody: body, nowMs: 1000 }).ok, true);
    assert.throws(
      () => deliveryHeaders({ eventId: '7', eventType: 'x', attempt: 1, body, timestampMs: 1, secrets: [] }),
      /invariant/,
    );
  });

  it('the Standard Webhooks headers verify with the reference library of that standard, for each secret of a rotation', () => {
    const body = deliveryBody({
      id: '42',
      eventType: 'payment.settled',
      attempt: 2,
      payloadText: '{"paymentId":"p-1"}',
    });
    const current = generateWebhookSecret();
    const previous = generateWebhookSecret();
    const nowMs = Date.now();
    const headers = deliveryHeaders({
      eventId: '42',
      eventType: 'payment.settled',
      attempt: 2,
      body,
      timestampMs: nowMs,
      secrets: [current, previous],
    });
    assert.equal(headers['webhook-id'], '42');
    assert.equal(headers['webhook-timestamp'], String(Math.floor(nowMs / 1000)));
    assert.match(headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/);
    for (const secret of [current, previous]) {
      assert.deepEqual(new StandardWebhook(secret).verify(body, headers), JSON.parse(body));
    }
    assert.throws(() => new StandardWebhook(generateWebhookSecret()).verify(body, headers));
    assert.throws(() => new StandardWebhook(current).verify(body.replace('p-1', 'p-2'), headers));
  });

  it('the previous secret signs only during its overlap window', () => {
    const endpoint = { secret: 'whsec_new', previousSecret: 'whsec_old', previousSecretExpiresAt: new Date(2000) };
    assert.deepEqual(signingSecrets(endpoint, new Date(1999)), ['whsec_new', 'whsec_old']);
    assert.deepEqual(signingSecrets(endpoint, new Date(2000)), ['whsec_new']);
    assert.deepEqual(
      signingSecrets({ secret: 'whsec_new', previousSecret: null, previousSecretExpiresAt: null }, new Date(0)),
      ['whsec_new'],
    );
  });

  it('secrets are whsec_ + 40 base62 characters, all different', () => {
    const secrets = new Set(Array.from({ length: 200 }, generateWebhookSecret));
    assert.equal(secrets.size, 200);
    for (const secret of secrets) assert.match(secret, /^whsec_[0-9A-Za-z]{40}$/);
  });

  it('classifies addresses a live endpoint may not reach', () => {
    const forbidden = [
      // IPv4 outside public unicast
      '127.0.0.1',
      '127.255.255.254',
      '0.0.0.0',
      '0.1.2.3',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '100.127.255.255',
      '100.100.100.200',
      '192.0.0.192',
      '192.0.2.1',
      '198.18.0.1',
      '192.88.99.1',
      '224.0.0.1',
      '240.0.0.1',
      '255.255.255.255',
      // IPv6 outside public unicast
      '::',
      '::1',
      'fc00::1',
      'fd00:ec2::254',
      'fe80::1',
      'fec0::1',
      'ff02::1',
      '100::1',
      '2001:db8::1',
      '2001:2::1',
      '2001:20::1',
      '5f00::1',
      // IPv4-mapped private addresses, in every spelling
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '0:0:0:0:0:ffff:7f00:1',
      // IPv6 forms that embed a private IPv4 address: 6to4, Teredo, NAT64 (well-known and local-use prefixes), SIIT, IPv4-compatible
      '2002:7f00:1::',
      '2002:a9fe:a9fe::',
      '2002:808:808::',
      '2001::1',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      '64:ff9b::7f00:1',
      '64:ff9b::169.254.169.254',
      '64:ff9b::808:808',
      '64:ff9b:1::a9fe:a9fe',
      '64:ff9b:1::1',
      '::ffff:0:7f00:1',
      '::ffff:0:8.8.8.8',
      '::7f00:1',
      '::a9fe:a9fe',
      // brackets and zone ids are stripped before classifying
      '[::1]',
      '[fe80::1]',
      'fe80::1%eth0',
      '[fe80::1%25eth0]',
      '[::ffff:127.0.0.1]',
      // not a canonical literal
      'not-an-ip',
      '',
      '127.1',
      '0x7f.0.0.1',
      '2130706433',
      '1.2.3',
      '::ffff:0x7f.1',
      '010.0.0.1',
    ];
    for (const address of forbidden) assert.equal(isPublicAddress(address), false, address);
    const allowed = [
      '8.8.8.8',
      '1.1.1.1',
      '93.184.216.34',
      '172.32.0.1',
      '100.128.0.1',
      '2606:4700:4700::1111',
      '2001:4860:4860::8888',
      '::ffff:8.8.8.8',
      '::ffff:808:808',
      '0:0:0:0:0:ffff:808:808',
      '[2606:4700:4700::1111]',
      '2606:4700:4700::1111%eth0',
      '[::ffff:8.8.8.8]',
    ];
    for (const address of allowed) assert.equal(isPublicAddress(address), true, address);
  });

  it('checks endpoint URLs without the network', () => {
    assert.equal(checkEndpointUrl('https://hooks.example.com/x', 'live').ok, true);
    assert.equal(checkEndpointUrl('http://localhost:3000/x', 'test').ok, true);
    for (const [url, mode] of [
      ['ftp://example.com', 'test'],
      ['example.com/x', 'test'],
      ['https://example.com/#a', 'test'],
      ['http://localhost/x', 'live'],
      ['http://printer.local/x', 'live'],
      ['http://db.internal/x', 'live'],
      ['http://[::1]:80/', 'live'],
      ['http://intranet/x', 'live'],
      ['http://[2002:7f00:1::]/x', 'live'],
      ['http://[2002:a9fe:a9fe::]/x', 'live'],
      ['http://[2001::a9fe:a9fe]/x', 'live'],
      ['http://[64:ff9b::a9fe:a9fe]/x', 'live'],
      ['http://[64:ff9b:1::7f00:1]/x', 'live'],
      ['http://[::ffff:0:7f00:1]/x', 'live'],
      ['http://[::ffff:127.0.0.1]/x', 'live'],
      ['http://[::127.0.0.1]/x', 'live'],
      ['http://0x7f000001/x', 'live'],
      ['http://0/x', 'live'],
    ] as const) {
      assert.equal(checkEndpointUrl(url, mode).ok, false, `${mode} ${url}`);
    }
    for (const url of ['https://8.8.8.8/x', 'https://[2606:4700:4700::1111]/x', 'https://[::ffff:8.8.8.8]/x']) {
      assert.equal(checkEndpointUrl(url, 'live').ok, true, url);
    }
  });

  it('the delivery-time lookup refuses a name if ANY of its addresses is internal (DNS rebinding)', async () => {
    const lookupWith = (addresses: Array<{ address: string; family: number }>, mode: 'test' | 'live' = 'live') =>
      guardedLookup(mode, (_host, callback) => callback(null, addresses));
    const call = (lookup: ReturnType<typeof guardedLookup>, all: boolean) =>
      new Promise<{ error: Error | null; result: unknown }>((resolve) =>
        (lookup as any)('hooks.example.com', { all }, (error: Error | null, address: unknown, family?: number) =>
          resolve({ error, result: all ? address : [address, family] }),
        ),
      );
    const publicOnly = lookupWith([{ address: '93.184.216.34', family: 4 }]);
    assert.deepEqual(await call(publicOnly, false), { error: null, result: ['93.184.216.34', 4] });
    assert.deepEqual(await call(publicOnly, true), { error: null, result: [{ address: '93.184.216.34', family: 4 }] });
    const mixed = lookupWith([
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ]);
    const refused = await call(mixed, false);
    assert.match(String(refused.error?.message), /not allowed in live mode/);
    for (const address of [
      '2002:a9fe:a9fe::',
      '2001::1',
      '64:ff9b::7f00:1',
      '::ffff:0:7f00:1',
      '::ffff:169.254.169.254',
    ]) {
      const embedded = lookupWith([
        { address: '2606:4700:4700::1111', family: 6 },
        { address, family: 6 },
      ]);
      assert.match(String((await call(embedded, true)).error?.message), /not allowed in live mode/, address);
    }
  });

  it('the configuration-time check refuses literals and names that are or resolve to embedded private addresses', async () => {
    const resolvingTo =
      (address: string, family: number) =>
      (_host: string, callback: (error: null, found: Array<{ address: string; family: number }>) => void) =>
        callback(null, [{ address, family }]);
    assert.deepEqual(await checkLiveHost('[2606:4700:4700::1111]'), { ok: true });
    assert.equal((await checkLiveHost('[2002:7f00:1::]')).ok, false);
    assert.equal((await checkLiveHost('[64:ff9b::a9fe:a9fe]')).ok, false);
    assert.equal((await checkLiveHost('hooks.example.com', resolvingTo('2002:a9fe:a9fe::', 6))).ok, false);
    assert.equal(
      (await checkLiveHost('hooks.example.com', resolvingTo('2001:0:4136:e378:8000:63bf:3fff:fdd2', 6))).ok,
      false,
    );
    assert.equal((await checkLiveHost('hooks.example.com', resolvingTo('::ffff:10.0.0.1', 6))).ok, false);
    assert.deepEqual(await checkLiveHost('hooks.example.com', resolvingTo('8.8.8.8', 4)), { ok: true });
  });

  it('test mode reaches public addresses and this host (loopback) only: no private, link-local, CGNAT or metadata address', () => {
    const loopback = ['127.0.0.1', '127.1.2.3', '::1', '[::1]', '::ffff:127.0.0.1', '::ffff:7f00:1'];
    const internal = [
      '10.0.0.5',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.10',
      '100.64.0.1',
      '100.127.255.255',
      '100.100.100.200',
      '169.254.169.254',
      '169.254.170.2',
      '169.254.0.1',
      'fe80::1',
      'fe80::1%eth0',
      'fc00::1',
      'fd00::2',
      'fd00:ec2::254',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '0.0.0.0',
      '::',
      '224.0.0.1',
      '255.255.255.255',
      '2002:a9fe:a9fe::',
      '64:ff9b::a9fe:a9fe',
      '::7f00:1',
      '127.1',
      'not-an-ip',
    ];
    for (const address of loopback) {
      assert.equal(mayReachAddress('test', address), true, address);
      assert.equal(mayReachAddress('live', address), false, address);
    }
    for (const address of internal) {
      assert.equal(mayReachAddress('test', address), false, address);
      assert.equal(mayReachAddress('live', address), false, address);
    }
    for (const address of ['8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111']) {
      assert.equal(mayReachAddress('test', address), true, address);
      assert.equal(mayReachAddress('live', address), true, address);
    }
  });

  it('test-mode URLs: loopback and any host name pass without the network; internal literals and metadata names do not', () => {
    for (const url of [
      'http://localhost:3000/x',
      'http://127.0.0.1:8080/hook',
      'http://[::1]:4000/x',
      'https://hooks.example.com/x',
      'http://receiver/x',
      'https://8.8.8.8/x',
    ]) {
      assert.equal(checkEndpointUrl(url, 'test').ok, true, url);
    }
    for (const url of [
      'http://10.0.0.5/x',
      'http://192.168.1.10/x',
      'http://172.16.3.4/x',
      'http://100.64.0.1/x',
      'http://169.254.169.254/latest/meta-data',
      'http://[fe80::1]/x',
      'http://[fd00::1]/x',
      'http://[fc00::1]/x',
      'http://[::ffff:a9fe:a9fe]/x',
      'http://0.0.0.0/x',
      'http://0/x',
      'http://metadata.google.internal/computeMetadata/v1/',
      'http://metadata/x',
      'http://instance-data/latest',
      'http://2852039166/x',
    ]) {
      const checked = checkEndpointUrl(url, 'test');
      assert.equal(checked.ok, false, url);
      if (!checked.ok) assert.match(checked.message, /metadata/, url);
    }
  });

  it('test mode resolves names too, at configuration and at every delivery (DNS rebinding): loopback passes, private does not', async () => {
    const resolvingTo =
      (...addresses: Array<[string, number]>) =>
      (_host: string, callback: (error: null, found: Array<{ address: string; family: number }>) => void) =>
        callback(
          null,
          addresses.map(([address, family]) => ({ address, family })),
        );
    assert.deepEqual(await checkEndpointHost('receiver.test', 'test', resolvingTo(['127.0.0.1', 4], ['::1', 6])), {
      ok: true,
    });
    assert.deepEqual(await checkEndpointHost('hooks.example.com', 'test', resolvingTo(['93.184.216.34', 4])), {
      ok: true,
    });
    for (const address of [
      ['10.1.2.3', 4],
      ['169.254.169.254', 4],
      ['100.64.1.1', 4],
      ['fd00::1', 6],
      ['fe80::1', 6],
    ] as Array<[string, number]>) {
      const checked = await checkEndpointHost('rebind.example.com', 'test', resolvingTo(['93.184.216.34', 4], address));
      assert.equal(checked.ok, false, address[0]);
      if (!checked.ok)
        assert.match(
          checked.message,
          /must not resolve to a private, link-local or metadata address .*\(rebind\.example\.com does\)/,
        );
    }
    assert.equal((await checkEndpointHost('[fe80::1]', 'test')).ok, false);
    assert.deepEqual(await checkEndpointHost('[::1]', 'test'), { ok: true });

    const call = (lookup: ReturnType<typeof guardedLookup>) =>
      new Promise<{ error: Error | null; address: unknown }>((resolve) =>
        (lookup as any)('rebind.example.com', { all: true }, (error: Error | null, address: unknown) =>
          resolve({ error, address }),
        ),
      );
    const local = await call(guardedLookup('test', resolvingTo(['127.0.0.1', 4])));
    assert.deepEqual(local, { error: null, address: [{ address: '127.0.0.1', family: 4 }] });
    const rebound = await call(guardedLookup('test', resolvingTo(['127.0.0.1', 4], ['192.168.0.10', 4])));
    assert.match(
      String(rebound.error?.message),
      /not allowed in test mode: rebind\.example\.com resolves to a private, link-local or metadata address/,
    );
  });
});
