// A body the SDK sends as it is rather than as JSON (a rail statement's CSV), against a local
// node:http server: its own content type, the bytes unchanged, a stream sent as it is read and,
// read once, never sent again; text is retried as any other call.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, it } from 'node:test';
import { Bolivar, BolivarError } from '../../sdk/src/index.ts';

interface Received {
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const STATEMENT = { id: 's1', rail: 'sandbox', counts: {} };

function unavailable(res: ServerResponse): void {
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' });
  res.end(
    JSON.stringify({
      error: { type: 'api_error', code: 'service_unavailable', message: 'later', request_id: 'req_1' },
    }),
  );
}

describe('SDK raw request bodies against a local HTTP server', () => {
  let server: Server;
  let baseUrl: string;
  let received: Received[];
  let unavailableFor: number;

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        received.push({ url: req.url!, headers: req.headers, body });
        if (received.length <= unavailableFor) return unavailable(res);
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify(STATEMENT));
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
    unavailableFor = 0;
  });

  const admin = () => new Bolivar({ apiKey: 'bsk_platform_x', baseUrl }).admin;
  const CSV = 'reference,bank_reference,amount,status,value_date\nr1,b1,5,settled,2026-01-02\n';

  it('sends text with its own content type, its bytes unchanged, and retries it as any other call', async () => {
    unavailableFor = 1;
    assert.deepEqual(
      await admin().rails.statements.import('bank a', CSV, { day: '2026-01-02', columns: 'reference:Ref' }),
      STATEMENT,
    );
    assert.equal(received.length, 2, 'a 503, then the same text again');
    for (const request of received) {
      assert.equal(request.url, '/v1/admin/rails/bank%20a/statements?day=2026-01-02&columns=reference%3ARef');
      assert.equal(request.headers['content-type'], 'text/csv');
      assert.equal(request.body, CSV);
    }
  });

  it('sends a stream as it reads it (chunked), and never again: a 503 is thrown at once', async () => {
    const stream = () => new Blob([CSV]).stream();
    assert.deepEqual(await admin().rails.statements.import('sandbox', stream(), { day: '2026-01-02' }), STATEMENT);
    assert.equal(received[0]!.headers['transfer-encoding'], 'chunked');
    assert.equal(received[0]!.body, CSV);

    received = [];
    unavailableFor = 1;
    const error = await admin()
      .rails.statements.import('sandbox', stream(), { day: '2026-01-02' })
      .catch((e: unknown) => e);
    assert.ok(error instanceof BolivarError && error.status === 503, String(error));
    assert.equal(received.length, 1, 'the stream was read once: not sent again');
  });
});
