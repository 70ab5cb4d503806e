import assert from 'node:assert/strict';
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../src/domain/clock.ts';
import { HttpWebhookTransport } from '../../src/webhooks/sender.ts';
import { WebhookDispatcher, type DispatcherSettings } from '../../src/workers/webhook-dispatcher.ts';
import type { Database } from '../../src/db/database.ts';
import { client, type TestApp } from './harness.ts';
import type { Mode } from '../../src/domain/partition.ts';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  body: any;
}

/** What the receiver does with one request: answer (status), or never answer until released. */
export type Behaviour = (request: ReceivedRequest, response: ServerResponse) => void | Promise<void>;

export const answer =
  (status: number, headers: Record<string, string> = {}): Behaviour =>
  (_request, response) => {
    response.writeHead(status, { 'content-type': 'application/json', ...headers });
    response.end(JSON.stringify({ status }));
  };

/** A real HTTP receiver on 127.0.0.1 (or `host`; port 0) that records every request with its raw bytes. */
export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  behaviour: Behaviour = answer(200);
  private readonly hanging = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    readonly host: string,
  ) {}

  static async start(behaviour?: Behaviour, host = '127.0.0.1'): Promise<TestReceiver> {
    let receiver: TestReceiver | undefined;
    const server = createServer((req, res) => void receiver!.handle(req, res));
    receiver = new TestReceiver(server, host);
    if (behaviour) receiver.behaviour = behaviour;
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/hook'): string {
    return `http://${this.host}:${this.port}${path}`;
  }

  /** A behaviour that never answers (until `releaseHanging`). */
  hang(): Behaviour {
    return (_request, response) => {
      this.hanging.add(response);
    };
  }

  releaseHanging(status = 200): void {
    for (const response of this.hanging) {
      if (!response.destroyed && !response.writableEnded) {
        response.writeHead(status);
        response.end();
      }
    }
    this.hanging.clear();
  }

  eventIds(): string[] {
    return this.requests.map((r) => String(r.headers['x-event-id']));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks);
    let body: unknown;
    try {
      body = JSON.parse(rawBody.toString('utf8'));
    } catch {
      body = undefined;
    }
    const request: ReceivedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      rawBody,
      body,
    };
    this.requests.push(request);
    await this.behaviour(request, res);
  }

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.hanging.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Sets the tenant's endpoint through the admin API; returns the signing secret. */
export async function setEndpoint(t: TestApp, tenantId: string, url: string, mode: Mode = 'test'): Promise<string> {
  const response = await client(t.app, t.platformKey).put(`/v1/admin/tenants/${tenantId}/webhook-endpoint`, {
    mode,
    url,
  });
  assert.equal(response.status, 200, response.raw);
  return response.body.secret;
}

export function dispatcherFor(
  db: Database,
  clock: Clock,
  settings: Partial<DispatcherSettings> = {},
  transport: { ownOrigin?: string } = {},
): WebhookDispatcher {
  // The production bound: a local receiver answers at once, but a loaded CI machine can stall one
  // delivery past a second, and a retried event fails the tests that count attempts.
  const timeoutMs = settings.timeoutMs ?? 5000;
  const full: DispatcherSettings = { timeoutMs, backoffScale: 1, concurrency: 16, ...settings };
  return new WebhookDispatcher(
    db,
    clock,
    new HttpWebhookTransport({ timeoutMs, connectionsPerOrigin: full.originConcurrency ?? 8, ...transport }),
    full,
  );
}

export async function eventRow(db: Database, id: string | bigint) {
  const { rows } = await db.query<any>(`SELECT * FROM outbox_events WHERE id = $1`, [BigInt(id)]);
  assert.ok(rows[0], `event ${id} exists`);
  return rows[0];
}

export async function deliveryRows(db: Database, id: string | bigint) {
  const { rows } = await db.query<any>(`SELECT * FROM webhook_deliveries WHERE event_id = $1 ORDER BY attempt`, [
    BigInt(id),
  ]);
  return rows;
}

/** The outbox events of one payment, oldest first. */
export async function eventsOfPayment(db: Database, tenantId: string, paymentId: string) {
  const { rows } = await db.query<any>(
    `SELECT * FROM outbox_events WHERE tenant_id = $1 AND aggregate_id = $2 ORDER BY id`,
    [tenantId, paymentId],
  );
  return rows;
}
