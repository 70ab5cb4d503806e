// Errors raised below the routes (Node's HTTP parser, Fastify's router) are answered in the error
// envelope with stable codes, over a real socket where the parser is involved.
import assert from 'node:assert/strict';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ERROR_CODES } from '../../src/domain/errors.ts';
import { clientErrorHandler } from '../../src/http/plugins/transport-errors.ts';
import { assertEnvelope, client, createTenant, startTestApp, type TestApp } from '../support/harness.ts';

/** Bound of one raw exchange: the server answers these at once, or closes. */
const RAW_EXCHANGE_TIMEOUT_MS = 10_000;

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: any;
}

function parseRaw(text: string): RawAnswer {
  const [head, ...rest] = text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '').split('\r\n\r\n');
  const [statusLine, ...headerLines] = head!.split('\r\n');
  const headers = Object.fromEntries(
    headerLines.map((line) => {
      const at = line.indexOf(':');
      return [line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim()];
    }),
  );
  const bodyText = rest.join('\r\n\r\n');
  return { status: Number(statusLine!.split(' ')[1]), headers, body: bodyText ? JSON.parse(bodyText) : undefined };
}

/**
 * Writes bytes as they are and reads until the server closes the connection. With `afterContinue`,
 * those bytes (the body) are written once the server has answered `100 Continue`, if it does.
 */
function rawExchange(port: number, bytes: string, afterContinue?: string): Promise<RawAnswer & { raw: string }> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${RAW_EXCHANGE_TIMEOUT_MS} ms; got so far: ${received}`));
    }, RAW_EXCHANGE_TIMEOUT_MS);
    socket.on('data', (chunk) => {
      const before = received;
      received += chunk.toString('utf8');
      if (
        afterContinue !== undefined &&
        !before.includes('100 Continue') &&
        received.startsWith('HTTP/1.1 100 Continue\r\n\r\n')
      )
        socket.write(afterContinue);
    });
    socket.on('error', () => {
      // the server may reset after answering; what was read is what counts
    });
    socket.on('close', () => {
      clearTimeout(timer);
      try {
        resolve({ ...parseRaw(received), raw: received });
      } catch (error) {
        reject(new Error(`unparseable answer: ${JSON.stringify(received)} (${String(error)})`));
      }
    });
    socket.write(bytes);
  });
}

function assertRawEnvelope(answer: RawAnswer, status: number, code: keyof typeof ERROR_CODES): void {
  assert.equal(answer.status, status, JSON.stringify(answer));
  assert.match(answer.headers['content-type'] ?? '', /^application\/json/);
  assert.equal(answer.body?.error?.code, code, JSON.stringify(answer.body));
  assert.equal(answer.body.error.type, ERROR_CODES[code].type);
  assert.equal(typeof answer.body.error.message, 'string');
  assert.match(answer.body.error.request_id, /^req_[0-9a-f]{32}$/);
  assert.equal(answer.headers['x-request-id'], answer.body.error.request_id);
}

describe('transport and router errors', () => {
  let t: TestApp;
  let port: number;
  let key: string;
  before(async () => {
    t = await startTestApp();
    key = (await createTenant(t)).key;
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
  });
  after(async () => {
    await t.close();
  });

  it('a malformed percent-encoding in the path is 400 malformed_request', async () => {
    const api = client(t.app, t.platformKey);
    assertEnvelope(assert, await api.get('/v1/quotes/%ZZ'), 400, 'malformed_request');
  });

  it('a path parameter over 100 characters is 414 uri_too_long', async () => {
    const api = client(t.app, t.platformKey);
    assertEnvelope(assert, await api.get(`/v1/quotes/${'a'.repeat(101)}`), 414, 'uri_too_long');
  });

  it("a refusal of the reference's static files (a forbidden or missing name) is 404 route_not_found, not a 500", async () => {
    const api = client(t.app);
    assertEnvelope(assert, await api.get(`/docs/static/${'a'.repeat(300)}`), 404, 'route_not_found');
    assertEnvelope(assert, await api.get('/docs/static/no-such-file.js'), 404, 'route_not_found');
  });

  it('a malformed request line is 400 malformed_request', async () => {
    assertRawEnvelope(await rawExchange(port, 'GARBAGE\r\n\r\n'), 400, 'malformed_request');
  });

  it('a line break inside a header value is 400 malformed_request', async () => {
    const answer = await rawExchange(
      port,
      'GET /v1/tenant/me HTTP/1.1\r\nhost: x\r\nx-api-key: bsk_test_abc\rdef\r\n\r\n',
    );
    assertRawEnvelope(answer, 400, 'malformed_request');
  });

  it('headers over 16 KiB are 431 headers_too_large', async () => {
    const answer = await rawExchange(
      port,
      `GET /health/live HTTP/1.1\r\nhost: x\r\nx-padding: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assertRawEnvelope(answer, 431, 'headers_too_large');
  });

  it('an Expect other than 100-continue is 417 expectation_failed', async () => {
    const answer = await rawExchange(port, 'GET /health/live HTTP/1.1\r\nhost: x\r\nexpect: bogus\r\n\r\n');
    assertRawEnvelope(answer, 417, 'expectation_failed');
  });

  describe('Expect: 100-continue', () => {
    const quoteBody = JSON.stringify({ deliver: { asset: 'BS', amount: 5_000_000 } });
    const headers = (extra: string, length: number) =>
      `POST /v1/quotes HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\nexpect: 100-continue\r\nconnection: close\r\n${extra}\r\n`;

    it('is answered 401 at once, without 100 Continue, when the key does not authenticate', async () => {
      for (const extra of ['', 'x-api-key: bsk_test_unknownunknownunknownunknownunknown\r\n']) {
        const answer = await rawExchange(port, headers(extra, quoteBody.length));
        assert.ok(!answer.raw.startsWith('HTTP/1.1 100'), answer.raw);
        assertRawEnvelope(answer, 401, extra ? 'api_key_invalid' : 'api_key_missing');
        assert.equal(answer.headers.connection, 'close');
      }
    });

    it('is answered 413 at once, without 100 Continue, when the declared length is over 64 KiB', async () => {
      const answer = await rawExchange(port, headers(`x-api-key: ${key}\r\n`, 10_000_000));
      assert.ok(!answer.raw.startsWith('HTTP/1.1 100'), answer.raw);
      assertRawEnvelope(answer, 413, 'payload_too_large');
      assert.equal(answer.headers.connection, 'close');
    });

    it('gets 100 Continue once the key and the length pass, then the answer to the body sent after it', async () => {
      const answer = await rawExchange(port, headers(`x-api-key: ${key}\r\n`, quoteBody.length), quoteBody);
      assert.ok(answer.raw.startsWith('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 '), answer.raw.slice(0, 200));
      assert.equal(answer.status, 201);
      assert.equal(answer.body.deliver.amount, '5000000');
      assert.match(answer.headers['x-request-id'] ?? '', /^req_/);
    });
  });

  it('an HTTP/1.1 request without Host is 400 malformed_request with x-request-id; HTTP/1.0 needs none', async () => {
    assertRawEnvelope(
      await rawExchange(port, 'GET /health/live HTTP/1.1\r\nconnection: close\r\n\r\n'),
      400,
      'malformed_request',
    );
    const keyed = await rawExchange(
      port,
      `GET /v1/tenant/me HTTP/1.1\r\nx-api-key: ${key}\r\nconnection: close\r\n\r\n`,
    );
    assertRawEnvelope(keyed, 400, 'malformed_request');
    assert.match(keyed.body.error.message, /Host/);
    const old = await rawExchange(port, 'GET /health/live HTTP/1.0\r\n\r\n');
    assert.equal(old.status, 200, old.raw);
  });

  it('CONNECT is 400 malformed_request in the envelope, with x-request-id, and the connection closed', async () => {
    const answer = await rawExchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n');
    assertRawEnvelope(answer, 400, 'malformed_request');
    assert.match(answer.body.error.message, /CONNECT is not served/);
    assert.equal(answer.headers.connection, 'close');
  });

  it('a client too slow to send its request is answered 408 request_timeout (the handler Node calls)', () => {
    let written = '';
    let destroyed = false;
    const socket = {
      destroyed: false,
      writable: true,
      write(text: string) {
        written += text;
        return true;
      },
      destroy() {
        destroyed = true;
      },
    };
    clientErrorHandler(Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket as never);
    assertRawEnvelope(parseRaw(written), 408, 'request_timeout');
    assert.equal(destroyed, true);
  });

  it('a reset connection gets nothing written', () => {
    let written = '';
    const socket = { destroyed: true, writable: false, write: (text: string) => (written += text), destroy() {} };
    clientErrorHandler(Object.assign(new Error('reset'), { code: 'ECONNRESET' }), socket as never);
    assert.equal(written, '');
  });
});
