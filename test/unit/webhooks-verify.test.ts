import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
// The verifier is the SDK's (its one home); the signatures are made by the service's signing code, so
// every case below is the service signing and the SDK verifying.
import {
  computeSignature as sdkComputeSignature,
  constructEvent,
  DEFAULT_TOLERANCE_MS,
  signatureHeader as sdkSignatureHeader,
  verifyWebhook,
  WebhookVerificationError,
} from '../../sdk/src/webhooks.ts';
import { deliveryBody, deliveryHeaders } from '../../src/domain/webhooks.ts';
import { verifyWebhook as fromPackage } from '../../src/index.ts';
import { computeSignature, signatureHeader, verifySignature } from '../../src/domain/webhook-signature.ts';

const SECRET = 'whsec_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcd';
const OTHER = 'whsec_zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONM';
const NOW = 1_767_225_600_000;
const BODY =
  '{"id":"42","eventType":"payment.settled","attempt":1,"payload":{"paymentId":"p","amount":"100","note":"ñandú"}}';

function headersFor(body: string | Buffer, options: { secrets?: string[]; timestamp?: number } = {}) {
  const ts = String(options.timestamp ?? NOW);
  return {
    'content-type': 'application/json',
    'x-timestamp': ts,
    'x-signature': signatureHeader(options.secrets ?? [SECRET], ts, body),
    'x-event-id': '42',
  };
}

describe('verifyWebhook', () => {
  it('is the package main export', () => {
    assert.equal(fromPackage, verifyWebhook);
  });

  it('signs HMAC-SHA256 of "<timestamp>.<raw body>" in hex', () => {
    const expected = createHmac('sha256', SECRET).update(`${NOW}.${BODY}`).digest('hex');
    assert.equal(computeSignature(SECRET, NOW, BODY), expected);
    assert.equal(computeSignature(SECRET, String(NOW), Buffer.from(BODY)), expected, 'bytes and strings agree (UTF-8)');
    assert.equal(
      signatureHeader([SECRET, OTHER], NOW, BODY),
      `sha256=${expected},sha256=${computeSignature(OTHER, NOW, BODY)}`,
    );
  });

  it("the SDK's signing helpers (for a receiver's own tests) sign as the service does", () => {
    assert.equal(sdkComputeSignature(SECRET, NOW, Buffer.from(BODY)), computeSignature(SECRET, NOW, BODY));
    assert.equal(sdkSignatureHeader([SECRET, OTHER], String(NOW), BODY), signatureHeader([SECRET, OTHER], NOW, BODY));
  });

  it('accepts a valid delivery (string or bytes body) and reports the timestamp and event id', () => {
    const headers = headersFor(BODY);
    assert.deepEqual(verifyWebhook({ secret: SECRET, headers, rawBody: BODY, nowMs: NOW }), {
      ok: true,
      timestampMs: NOW,
      eventId: '42',
    });
    assert.equal(verifyWebhook({ secret: SECRET, headers, rawBody: Buffer.from(BODY, 'utf8'), nowMs: NOW }).ok, true);
    assert.equal(
      verifyWebhook({ secret: SECRET, headers, rawBody: new Uint8Array(Buffer.from(BODY, 'utf8')), nowMs: NOW }).ok,
      true,
    );
  });

  it('reads headers case-insensitively, from a plain object or a fetch Headers', () => {
    const headers = headersFor(BODY);
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    assert.equal(verifyWebhook({ secret: SECRET, headers: upper, rawBody: BODY, nowMs: NOW }).ok, true);
    assert.equal(verifyWebhook({ secret: SECRET, headers: new Headers(headers), rawBody: BODY, nowMs: NOW }).ok, true);
  });

  it('rejects a tampered body, even a re-serialization of the same object', () => {
    const headers = headersFor(BODY);
    assert.deepEqual(verifyWebhook({ secret: SECRET, headers, rawBody: BODY.replace('"100"', '"101"'), nowMs: NOW }), {
      ok: false,
      reason: 'signature_mismatch',
    });
    const reserialized = JSON.stringify(JSON.parse(BODY), null, 1);
    assert.equal(verifyWebhook({ secret: SECRET, headers, rawBody: reserialized, nowMs: NOW }).ok, false);
  });

  it('rejects the wrong secret, and a signature moved to another timestamp', () => {
    assert.deepEqual(verifyWebhook({ secret: OTHER, headers: headersFor(BODY), rawBody: BODY, nowMs: NOW }), {
      ok: false,
      reason: 'signature_mismatch',
    });
    const moved = { ...headersFor(BODY), 'x-timestamp': String(NOW + 1) };
    assert.equal(verifyWebhook({ secret: SECRET, headers: moved, rawBody: BODY, nowMs: NOW }).ok, false);
  });

  it('accepts any of several signatures, and any of several secrets', () => {
    const rotated = headersFor(BODY, { secrets: [OTHER, SECRET] });
    assert.equal(
      verifyWebhook({ secret: SECRET, headers: rotated, rawBody: BODY, nowMs: NOW }).ok,
      true,
      'receiver still on the old secret',
    );
    assert.equal(
      verifyWebhook({ secret: OTHER, headers: rotated, rawBody: BODY, nowMs: NOW }).ok,
      true,
      'receiver on the new secret',
    );
    assert.equal(
      verifyWebhook({ secret: [OTHER, SECRET], headers: headersFor(BODY), rawBody: BODY, nowMs: NOW }).ok,
      true,
      'receiver holding both',
    );
    const spaced = { ...rotated, 'x-signature': ` v1=abc, ${rotated['x-signature'].split(',').join(' , ')} ` };
    assert.equal(
      verifyWebhook({ secret: SECRET, headers: spaced, rawBody: BODY, nowMs: NOW }).ok,
      true,
      'unknown schemes and spaces are ignored',
    );
    const upperHex = {
      ...headersFor(BODY),
      'x-signature': headersFor(BODY)['x-signature'].toUpperCase().replace('SHA256=', 'sha256='),
    };
    assert.equal(verifyWebhook({ secret: SECRET, headers: upperHex, rawBody: BODY, nowMs: NOW }).ok, true);
  });

  it('rejects stale and future timestamps beyond the tolerance (default 5 minutes)', () => {
    assert.equal(DEFAULT_TOLERANCE_MS, 300_000);
    const headers = headersFor(BODY);
    assert.equal(
      verifyWebhook({ secret: SECRET, headers, rawBody: BODY, nowMs: NOW + 300_000 }).ok,
      true,
      'exactly at the edge',
    );
    assert.deepEqual(verifyWebhook({ secret: SECRET, headers, rawBody: BODY, nowMs: NOW + 300_001 }), {
      ok: false,
      reason: 'timestamp_outside_tolerance',
    });
    assert.deepEqual(verifyWebhook({ secret: SECRET, headers, rawBody: BODY, nowMs: NOW - 300_001 }), {
      ok: false,
      reason: 'timestamp_outside_tolerance',
    });
    assert.equal(
      verifyWebhook({ secret: SECRET, headers, rawBody: BODY, nowMs: NOW + 60_000, toleranceMs: 30_000 }).ok,
      false,
    );
    assert.equal(
      verifyWebhook({ secret: SECRET, headers, rawBody: BODY, nowMs: NOW + 60_000, toleranceMs: 120_000 }).ok,
      true,
    );
    const fresh = headersFor(BODY, { timestamp: Date.now() });
    assert.equal(
      verifyWebhook({ secret: SECRET, headers: fresh, rawBody: BODY }).ok,
      true,
      'defaults to the wall clock',
    );
  });

  it('says what is missing or malformed, and never throws', () => {
    const headers = headersFor(BODY);
    const { 'x-timestamp': _ts, ...noTimestamp } = headers;
    const { 'x-signature': _sig, ...noSignature } = headers;
    assert.deepEqual(verifyWebhook({ secret: SECRET, headers: noTimestamp, rawBody: BODY, nowMs: NOW }), {
      ok: false,
      reason: 'missing_timestamp',
    });
    assert.deepEqual(verifyWebhook({ secret: SECRET, headers: noSignature, rawBody: BODY, nowMs: NOW }), {
      ok: false,
      reason: 'missing_signature',
    });
    assert.deepEqual(
      verifyWebhook({ secret: SECRET, headers: { ...headers, 'x-timestamp': '17e11' }, rawBody: BODY, nowMs: NOW }),
      { ok: false, reason: 'invalid_timestamp' },
    );
    assert.deepEqual(
      verifyWebhook({ secret: SECRET, headers: { ...headers, 'x-signature': 'sha256=zz' }, rawBody: BODY, nowMs: NOW }),
      { ok: false, reason: 'signature_mismatch' },
    );
    assert.deepEqual(verifyWebhook({ secret: '', headers, rawBody: BODY, nowMs: NOW }), {
      ok: false,
      reason: 'missing_secret',
    });
    assert.deepEqual(verifyWebhook({ secret: [], headers, rawBody: BODY, nowMs: NOW }), {
      ok: false,
      reason: 'missing_secret',
    });
  });

  it('takes the event id from the signed body: a captured delivery replayed with another x-event-id is the same event', () => {
    // A delivery exactly as the dispatcher builds it, captured and replayed within the window.
    const body = deliveryBody({ id: 42n, eventType: 'payment.settled', attempt: 1, payloadText: '{"paymentId":"p"}' });
    const captured = deliveryHeaders({
      eventId: '42',
      eventType: 'payment.settled',
      attempt: 1,
      body,
      timestampMs: NOW,
      secrets: [SECRET],
    });
    const first = verifyWebhook({ secret: SECRET, headers: captured, rawBody: body, nowMs: NOW });
    assert.deepEqual(first, { ok: true, timestampMs: NOW, eventId: '42' });
    for (const forged of ['43', '', 'x']) {
      const replay = verifyWebhook({
        secret: SECRET,
        headers: { ...captured, 'x-event-id': forged },
        rawBody: body,
        nowMs: NOW + 1000,
      });
      assert.deepEqual(replay, { ok: true, timestampMs: NOW, eventId: '42' }, `x-event-id ${JSON.stringify(forged)}`);
    }
    const { 'x-event-id': _dropped, ...withoutHeader } = captured;
    assert.deepEqual(verifyWebhook({ secret: SECRET, headers: withoutHeader, rawBody: body, nowMs: NOW }), {
      ok: true,
      timestampMs: NOW,
      eventId: '42',
    });
    assert.equal(constructEvent(body, { ...captured, 'x-event-id': '43' }, SECRET, { nowMs: NOW }).id, '42');
  });

  it('refuses signed bytes that are not a delivery body (invalid_body), so there is always an event id', () => {
    for (const body of [
      'not json',
      '[]',
      '{"eventType":"payment.settled","payload":{}}',
      '{"id":42,"eventType":"payment.settled","payload":{}}',
      '{"id":"","eventType":"payment.settled","payload":{}}',
    ]) {
      const headers = headersFor(body);
      assert.deepEqual(
        verifyWebhook({ secret: SECRET, headers, rawBody: body, nowMs: NOW }),
        { ok: false, reason: 'invalid_body' },
        body,
      );
      assert.throws(
        () => constructEvent(body, headers, SECRET, { nowMs: NOW }),
        (error) => error instanceof WebhookVerificationError && error.reason === 'invalid_body',
      );
    }
    // The body is judged only once its signature holds: a forged body is a signature_mismatch.
    assert.deepEqual(verifyWebhook({ secret: SECRET, headers: headersFor(BODY), rawBody: 'not json', nowMs: NOW }), {
      ok: false,
      reason: 'signature_mismatch',
    });
  });
});

// The sandbox sink checks deliveries with the service's own verifier (the service does not import the
// SDK): on every signature and timestamp case it must say what the SDK's says.
describe("the service's signature check agrees with the SDK's verifier", () => {
  const headers = headersFor(BODY);
  const { 'x-timestamp': _ts, ...noTimestamp } = headers;
  const { 'x-signature': _sig, ...noSignature } = headers;
  const rotated = headersFor(BODY, { secrets: [OTHER, SECRET] });
  const cases: { name: string; secrets: string[]; headers: Record<string, unknown>; body: string; nowMs: number }[] = [
    { name: 'valid', secrets: [SECRET], headers, body: BODY, nowMs: NOW },
    { name: 'tampered body', secrets: [SECRET], headers, body: BODY.replace('"100"', '"101"'), nowMs: NOW },
    { name: 'wrong secret', secrets: [OTHER], headers, body: BODY, nowMs: NOW },
    { name: 'rotation, old secret', secrets: [SECRET], headers: rotated, body: BODY, nowMs: NOW },
    { name: 'both secrets', secrets: [OTHER, SECRET], headers, body: BODY, nowMs: NOW },
    {
      name: 'spaces and unknown schemes',
      secrets: [SECRET],
      headers: { ...rotated, 'x-signature': ` v1=abc, ${rotated['x-signature'].split(',').join(' , ')} ` },
      body: BODY,
      nowMs: NOW,
    },
    {
      name: 'upper-case hex',
      secrets: [SECRET],
      headers: { ...headers, 'x-signature': headers['x-signature'].toUpperCase().replace('SHA256=', 'sha256=') },
      body: BODY,
      nowMs: NOW,
    },
    {
      name: 'repeated signature header',
      secrets: [SECRET],
      headers: { ...headers, 'x-signature': ['sha256=00', headers['x-signature']] },
      body: BODY,
      nowMs: NOW,
    },
    { name: 'at the edge', secrets: [SECRET], headers, body: BODY, nowMs: NOW + 300_000 },
    { name: 'stale', secrets: [SECRET], headers, body: BODY, nowMs: NOW + 300_001 },
    { name: 'future', secrets: [SECRET], headers, body: BODY, nowMs: NOW - 300_001 },
    { name: 'no timestamp', secrets: [SECRET], headers: noTimestamp, body: BODY, nowMs: NOW },
    { name: 'no signature', secrets: [SECRET], headers: noSignature, body: BODY, nowMs: NOW },
    {
      name: 'timestamp not decimal',
      secrets: [SECRET],
      headers: { ...headers, 'x-timestamp': '17e11' },
      body: BODY,
      nowMs: NOW,
    },
    {
      name: 'signature not hex',
      secrets: [SECRET],
      headers: { ...headers, 'x-signature': 'sha256=zz' },
      body: BODY,
      nowMs: NOW,
    },
    { name: 'empty secret', secrets: [''], headers, body: BODY, nowMs: NOW },
    { name: 'no secret', secrets: [], headers, body: BODY, nowMs: NOW },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const sdk = verifyWebhook({
        secret: c.secrets,
        headers: c.headers as Record<string, string | string[]>,
        rawBody: c.body,
        nowMs: c.nowMs,
      });
      const ours = verifySignature({
        secrets: c.secrets,
        headers: c.headers,
        rawBody: Buffer.from(c.body, 'utf8'),
        nowMs: c.nowMs,
      });
      assert.deepEqual(ours, sdk.ok ? { ok: true, timestampMs: sdk.timestampMs } : sdk);
    });
  }
});
