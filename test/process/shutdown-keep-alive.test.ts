// A graceful shutdown with a request in flight on a kept-alive connection: the request is answered,
// and the process exits at once, not when that connection's keep-alive (75 s) or the shutdown's grace
// runs out. The client keeps its connections open as a proxy's upstream pool does.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { createTestDatabase, ENGINE } from '../support/harness.ts';
import { SENDER, beneficiary } from '../support/payouts.ts';
import { startService } from '../support/process.ts';
import { until } from '../support/until.ts';

/** The payout's send to a rail that never answers ends at this timeout, while the shutdown waits. */
const RAIL_TIMEOUT_MS = 3_000;
/** Past this the process exits anyway (exit 1): far beyond the in-flight payout, far below the keep-alive. */
const SHUTDOWN_GRACE_MS = 40_000;
/** The exit must come this soon after SIGTERM: the in-flight payout's rail timeout and a margin for a busy machine. */
const EXIT_BOUND_MS = 20_000;

describe(`shutdown with a request in flight on a kept-alive connection on ${ENGINE}`, () => {
  it('answers the request and exits 0 without waiting out the keep-alive', { timeout: 110_000 }, async () => {
    const dataDir = path.join(mkdtempSync(path.join(tmpdir(), 'bds-keep-alive-')), 'data');
    const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    const service = await startService({
      DATA_DIR: dataDir,
      DATABASE_URL: database?.url ?? '',
      SANDBOX_RAIL_TIMEOUT_MS: String(RAIL_TIMEOUT_MS),
      SHUTDOWN_GRACE_MS: String(SHUTDOWN_GRACE_MS),
    });
    // One connection, kept open for ten minutes when idle.
    const agent = new Agent({ connections: 1, keepAliveTimeout: 600_000, keepAliveMaxTimeout: 600_000 });
    try {
      const apiKey = JSON.parse(readFileSync(path.join(dataDir, 'bootstrap.json'), 'utf8')).apiKey as string;
      const call = async (method: 'GET' | 'POST', route: string, body?: unknown, key?: string) => {
        const answer = await request(`${service.baseUrl}${route}`, {
          method,
          dispatcher: agent,
          headers: {
            'x-api-key': apiKey,
            'content-type': 'application/json',
            ...(key ? { 'idempotency-key': key } : {}),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: answer.statusCode, body: (await answer.body.json()) as any };
      };
      const quote = await call('POST', '/v1/quotes', { deliver: { asset: 'BS', amount: 1_000_000 } });
      assert.equal(quote.status, 201, JSON.stringify(quote.body));
      // The sandbox receives this payout and never answers: it is in flight for the rail timeout.
      const inFlight = call(
        'POST',
        '/v1/payouts',
        { quoteId: quote.body.id, method: 'pago_movil', sender: SENDER, beneficiary: beneficiary('V99990009') },
        'keep-alive-shutdown-1',
      );
      await until('the payout committed (the rail call under way)', async () => {
        const listed = await fetch(`${service.baseUrl}/v1/payments?limit=1`, { headers: { 'x-api-key': apiKey } });
        return ((await listed.json()) as { data: unknown[] }).data.length === 1;
      });
      const signalledAt = Date.now();
      const exited = service.stop('SIGTERM');
      const answer = await inFlight;
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      assert.equal(answer.body.status, 'unknown', 'the rail never answered: unknown, resolved later by asking');
      const code = await exited;
      const exitMs = Date.now() - signalledAt;
      assert.equal(code, 0, service.output());
      assert.ok(exitMs < EXIT_BOUND_MS, `exited ${exitMs} ms after SIGTERM (the keep-alive would hold it 75 s)`);
    } finally {
      await service.stop('SIGKILL');
      await agent.close().catch(() => undefined);
      await database?.drop();
    }
  });
});
