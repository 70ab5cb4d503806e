// The SDK's request rules against a local node:http server that answers what a test needs (a 503, a
// dropped connection), which the real service cannot be made to do on cue: the same Idempotency-Key
// on every retry, what is retried and what is not, the bound, Retry-After, the error's fields, and
// amounts checked before anything is sent.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { Bolivar, BolivarConnectionError, BolivarError, toApiAmount } from '../../sdk/src/index.ts';
import { backoffMs, BASE_BACKOFF_MS, MAX_BACKOFF_MS, retryAfterMs } from '../../sdk/src/transport.ts';

interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  atMs: number;
}

type Answer = (request: Received, res: ServerResponse) => void;

function envelope(
  res: ServerResponse,
  status: number,
  code: string,
  headers: Record<string, string> = {},
  meta?: Record<string, unknown>,
): void {
  res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req_${code}`, ...headers });
  res.end(
    JSON.stringify({
      error: {
        type: status === 429 ? 'rate_limit_error' : 'api_error',
        code,
        message: `${code} happened`,
        request_id: `req_${code}`,
        ...(meta ? { meta } : {}),
      },
    }),
  );
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

const QUOTE = {
  id: 'q1',
  fixed: 'deliver',
  spend: { asset: 'BS', amount: '5050000' },
  deliver: { asset: 'BS', amount: '5000000' },
};

describe('SDK transport against a local HTTP server', () => {
  let server: Server;
  let baseUrl: string;
  let received: Received[];
  let answers: Answer[];

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const request = { method: req.method!, url: req.url!, headers: req.headers, body, atMs: Date.now() };
        received.push(request);
        const answer = answers.shift() ?? ((_r: Received, out: ServerResponse) => json(out, 200, QUOTE));
        answer(request, res);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  beforeEach(() => {
    received = [];
    answers = [];
  });

  const sdk = (maxRetries?: number) =>
    new Bolivar({ apiKey: 'bsk_test_x', baseUrl, ...(maxRetries === undefined ? {} : { maxRetries }) });
  const drop: Answer = (_request, res) => res.socket?.destroy();

  it('generates an Idempotency-Key when none is given and retries 503, 429 and 409 in-progress with the same key', async () => {
    answers = [
      (_r, res) => envelope(res, 503, 'service_unavailable', { 'retry-after': '0' }),
      (_r, res) => envelope(res, 429, 'rate_limited', { 'retry-after': '0' }),
      (_r, res) => envelope(res, 409, 'idempotency_request_in_progress'),
    ];
    const quote = await sdk().quotes.create({ deliver: { asset: 'BS', amount: 5_000_000 } });
    assert.equal(quote.id, 'q1');
    assert.equal(received.length, 4);
    const keys = new Set(received.map((r) => r.headers['idempotency-key']));
    assert.equal(keys.size, 1, 'one key for every attempt');
    assert.match(String([...keys][0]), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(received[0]!.headers['x-api-key'], 'bsk_test_x');

    await sdk().quotes.create({ deliver: { asset: 'BS', amount: 1 } });
    assert.notEqual(received[4]!.headers['idempotency-key'], [...keys][0], 'a new call, a new key');
  });

  it("uses the caller's key, and retries a dropped connection of a keyed call with it", async () => {
    answers = [drop, drop];
    const payout = await sdk().payouts.create(
      { quoteId: 'q', method: 'pago_movil', beneficiaryId: 'b' },
      { idempotencyKey: 'order-1001' },
    );
    assert.equal(payout.id, 'q1');
    assert.deepEqual(
      received.map((r) => r.headers['idempotency-key']),
      ['order-1001', 'order-1001', 'order-1001'],
    );
  });

  it('stops after maxRetries more attempts, and throws the last answer as a BolivarError with every field', async () => {
    for (let i = 0; i < 10; i += 1)
      answers.push((_r, res) => envelope(res, 503, 'overloaded', { 'retry-after': '0' }, { queue: 'payouts' }));
    const error = await sdk(2)
      .quotes.create({ deliver: { asset: 'BS', amount: 1 } })
      .catch((e: unknown) => e);
    assert.equal(received.length, 3, 'the first attempt and 2 retries');
    assert.ok(error instanceof BolivarError);
    assert.equal(error.status, 503);
    assert.equal(error.code, 'overloaded');
    assert.equal(error.type, 'api_error');
    assert.equal(error.message, 'overloaded happened');
    assert.equal(error.requestId, 'req_overloaded');
    assert.deepEqual(error.meta, { queue: 'payouts' });
    assert.equal(error.retryAfterSeconds, 0);

    received = [];
    answers = [(_r, res) => envelope(res, 503, 'service_unavailable', { 'retry-after': '0' })];
    await assert.rejects(
      sdk(0).quotes.create({ deliver: { asset: 'BS', amount: 1 } }),
      (e: unknown) => e instanceof BolivarError && e.code === 'service_unavailable',
    );
    assert.equal(received.length, 1, 'maxRetries 0: no retry');
  });

  it('waits Retry-After before retrying; does not wait one beyond its bound', async () => {
    answers = [(_r, res) => envelope(res, 429, 'rate_limited', { 'retry-after': '1' })];
    await sdk().tenant.me();
    assert.equal(received.length, 2);
    assert.ok(received[1]!.atMs - received[0]!.atMs >= 1000, `waited ${received[1]!.atMs - received[0]!.atMs} ms`);

    received = [];
    answers = [(_r, res) => envelope(res, 503, 'rate_unavailable', { 'retry-after': '3600' })];
    await assert.rejects(
      sdk().tenant.me(),
      (e: unknown) => e instanceof BolivarError && e.code === 'rate_unavailable' && e.retryAfterSeconds === 3600,
    );
    assert.equal(received.length, 1);
  });

  it('does not retry other errors, nor a dropped connection of a call that takes no key', async () => {
    answers = [
      (_r, res) => envelope(res, 409, 'idempotency_key_reused'),
      (_r, res) => envelope(res, 400, 'validation_failed', {}, { errors: [{ field: 'x', message: 'bad' }] }),
    ];
    await assert.rejects(
      sdk().quotes.create({ deliver: { asset: 'BS', amount: 1 } }),
      (e: unknown) => e instanceof BolivarError && e.code === 'idempotency_key_reused' && e.status === 409,
    );
    await assert.rejects(
      sdk().quotes.get('q1'),
      (e: unknown) => e instanceof BolivarError && e.code === 'validation_failed' && Array.isArray(e.meta?.errors),
    );
    assert.equal(received.length, 2);

    received = [];
    answers = [drop];
    const error = await sdk()
      .events.retryDead()
      .catch((e: unknown) => e);
    assert.ok(error instanceof BolivarConnectionError, String(error));
    assert.equal(error.attempts, 1);
    assert.equal(received.length, 1, 'a POST without an Idempotency-Key may have been done: not sent again');
    assert.equal(received[0]!.headers['idempotency-key'], undefined);

    received = [];
    answers = [drop, drop, drop, drop];
    const read = await sdk(3)
      .payments.get('p1')
      .catch((e: unknown) => e);
    assert.ok(read instanceof BolivarConnectionError);
    assert.equal(read.attempts, 4);
  });

  it('an error answer without the envelope is a BolivarError with code unexpected_response', async () => {
    answers = [(_r, res) => res.writeHead(502, { 'content-type': 'text/html' }).end('<html>bad gateway</html>')];
    const error = await sdk()
      .tenant.me()
      .catch((e: unknown) => e);
    assert.ok(error instanceof BolivarError);
    assert.equal(error.status, 502);
    assert.equal(error.code, 'unexpected_response');
    assert.match(error.message, /bad gateway/);
  });

  it('follows no redirect: the key never reaches the redirect target, and the 3xx is an error at once', async () => {
    // Another origin that would record whatever reached it.
    const reached: IncomingMessage['headers'][] = [];
    const elsewhere = createServer((req, res) => {
      reached.push(req.headers);
      json(res, 200, QUOTE);
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    const target = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/v1/collect`;
    try {
      for (const status of [301, 302, 303, 307, 308]) {
        received = [];
        answers = [(_r, res) => res.writeHead(status, { location: target, 'x-request-id': 'req_moved' }).end()];
        const read = await sdk()
          .tenant.me()
          .catch((e: unknown) => e);
        assert.ok(read instanceof BolivarError, String(read));
        assert.equal(read.status, status);
        assert.equal(read.code, 'unexpected_response');
        assert.equal(read.requestId, 'req_moved');
        assert.ok(read.message.includes(`redirect (HTTP ${status} to ${target})`), read.message);
        assert.equal(received.length, 1, `${status}: not retried`);
      }
      answers = [(_r, res) => res.writeHead(307, { location: target }).end()];
      received = [];
      await assert.rejects(
        sdk().quotes.create({ deliver: { asset: 'BS', amount: 1 } }),
        (e: unknown) => e instanceof BolivarError && e.status === 307,
      );
      assert.equal(received.length, 1, 'a keyed call is not retried either');
      assert.deepEqual(reached, [], 'nothing, and so no x-api-key, reached the redirect target');
    } finally {
      await new Promise((resolve) => elsewhere.close(resolve));
    }
  });

  it('sends amounts as the JSON integers the API reads, from bigint, number or digits; metadata untouched', async () => {
    const client = sdk();
    await client.quotes.create({
      deliver: { asset: 'BS', amount: 9_007_199_254_740_991n },
      metadata: { amount: '1.5' },
    });
    await client.quotes.create({ spend: { asset: 'USD', amount: '10000' }, deliver: { asset: 'BS' } });
    await client.admin.tenants.create({
      name: 'A',
      creditLimit: 5n,
      creditLimits: { USD: '7', VESC: null },
      feeFixed: 0,
    });
    await client.admin.limitRules.create({
      scope: 'platform',
      method: '*',
      per_tx_max: 10n,
      daily_max: '20',
      monthly_max: null,
      daily_count_max: 3,
    });
    const bodies = received.map((r) => r.body);
    assert.equal(bodies[0], '{"deliver":{"asset":"BS","amount":9007199254740991},"metadata":{"amount":"1.5"}}');
    assert.equal(bodies[1], '{"spend":{"asset":"USD","amount":10000},"deliver":{"asset":"BS"}}');
    assert.equal(bodies[2], '{"name":"A","creditLimit":5,"creditLimits":{"USD":7,"VESC":null},"feeFixed":0}');
    assert.equal(
      bodies[3],
      '{"scope":"platform","method":"*","per_tx_max":10,"daily_max":20,"monthly_max":null,"daily_count_max":3}',
    );
  });

  it('refuses non-integer, negative and unsafe amounts before sending anything, naming the field', async () => {
    const client = sdk();
    for (const amount of [
      1.5,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      -1,
      -1n,
      2 ** 53,
      9_007_199_254_740_992n,
      '1.5',
      '1e6',
      ' 5',
      '',
      '-5',
      '0x10',
    ]) {
      await assert.rejects(
        client.quotes.create({ deliver: { asset: 'BS', amount } }),
        (e: unknown) =>
          e instanceof RangeError && e.message.startsWith('deliver.amount: ') && /minor units/.test(e.message),
        String(amount),
      );
    }
    await assert.rejects(
      client.admin.tenants.update('t', { creditLimits: { USD: 0.5 } }),
      /creditLimits\.USD: not an integer/,
    );
    assert.equal(received.length, 0, 'nothing was sent');
    assert.equal(toApiAmount('007'), 7);
    assert.equal(toApiAmount(0n), 0);
  });

  it('backoff doubles from its base up to its ceiling, with jitter in the upper half; Retry-After reads seconds and dates', () => {
    assert.equal(
      backoffMs(0, () => 0),
      BASE_BACKOFF_MS / 2,
    );
    assert.equal(
      backoffMs(0, () => 1),
      BASE_BACKOFF_MS,
    );
    assert.equal(
      backoffMs(2, () => 1),
      BASE_BACKOFF_MS * 4,
    );
    assert.equal(
      backoffMs(30, () => 1),
      MAX_BACKOFF_MS,
    );
    assert.equal(retryAfterMs('2'), 2000);
    assert.equal(retryAfterMs(new Date(10_000).toUTCString(), 4000), 6000);
    assert.equal(retryAfterMs(null), undefined);
    assert.equal(retryAfterMs('soon'), undefined);
  });

  it('refuses a client without apiKey or baseUrl', () => {
    assert.throws(() => new Bolivar({ apiKey: '', baseUrl }), /apiKey/);
    assert.throws(() => new Bolivar({ apiKey: 'k', baseUrl: 'localhost:3000' }), /baseUrl/);
    assert.throws(() => new Bolivar({ apiKey: 'k', baseUrl, maxRetries: -1 }), /maxRetries/);
  });
});
