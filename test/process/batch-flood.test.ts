// A tenant that can pay nothing sends payout batches of 1,000 items as fast as its budget allows (two
// keys, the default RATE_LIMIT_RPS and PAYOUT_BATCH_TENANT_ITEMS_PER_S), against the service as
// `npm start` runs it on PostgreSQL, while another tenant reads and pays. Held: the flood gets no more
// than its budget (one full batch per key at once, then the refill), each batch is refused whole (422
// insufficient_tenant_funds) and writes nothing, and every request of the other tenant is answered.
// Measured and printed, not asserted (a latency ratio on a shared 2-core machine is not a test that
// can only fail for a reason): the other tenant's p99 alone and under the flood. Phases alternate
// (alone, flood, alone, flood) so that the machine's own noise falls on both sides. What the flood
// costs the process: a refused batch is parsed, charged to the budget (a 429 costs no more), its
// fingerprint taken and its items validated, each step on a turn of the background share, then two
// reads. Figures on this machine: before the background share 3 to 5x; with it, when each batch
// still priced, looked up and recorded its 1,000 refused items, reads 2.8 to 3.2x and payouts 2.1 to
// 2.7x; refused whole, three runs: reads 1.7/2.1/1.1x, payouts 1.7/1.3/1.7x.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { generateApiKey } from '../../src/domain/api-keys.ts';
import { createTestDatabase, ENGINE, type TestDatabase } from '../support/harness.ts';
import { SENDER, beneficiary, idempotencyKey } from '../support/payouts.ts';
import { startService, type ServiceProcess } from '../support/process.ts';

const PHASE_MS = 6_000;
const PHASES = ['alone', 'flood', 'alone', 'flood'] as const;
const ITEMS = 1000;
/** Full batches a key may send at once, then one per second of refill (RATE_LIMIT_RPS 1000 items a second). */
const BATCHES_PER_KEY_PER_S = 1;

const p99 = (samples: number[]) =>
  [...samples].sort((a, b) => a - b)[Math.min(samples.length - 1, Math.floor(samples.length * 0.99))]!;

describe(
  'a tenant flooding payout batches it cannot pay',
  {
    skip:
      ENGINE !== 'postgres'
        ? 'needs PostgreSQL (DATABASE_URL): the embedded engine has one connection, every request waits for the one before'
        : false,
  },
  () => {
    const platformKey = generateApiKey('platform');
    let service: ServiceProcess | undefined;
    let database: TestDatabase | undefined;
    after(async () => {
      await service?.stop('SIGTERM').catch(() => undefined);
      await database?.drop();
    });

    async function call(
      method: string,
      route: string,
      key: string,
      body?: unknown,
      headers: Record<string, string> = {},
    ) {
      const answer = await fetch(`${service!.baseUrl}${route}`, {
        method,
        headers: {
          'x-api-key': key,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      return { status: answer.status, headers: answer.headers, body: (await answer.json()) as any };
    }

    async function tenant(name: string, keys: number, funds: number): Promise<string[]> {
      const made = await call('POST', '/v1/admin/tenants', platformKey, { name });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      if (funds > 0) {
        const funded = await call(
          'POST',
          `/v1/admin/tenants/${made.body.id}/fundings`,
          platformKey,
          { mode: 'test', asset: 'BS', amount: funds },
          { 'idempotency-key': idempotencyKey() },
        );
        assert.equal(funded.status, 201, JSON.stringify(funded.body));
      }
      const issued: string[] = [];
      for (let i = 0; i < keys; i += 1)
        issued.push(
          (await call('POST', `/v1/admin/tenants/${made.body.id}/api-keys`, platformKey, { mode: 'test' })).body.key,
        );
      return issued;
    }

    it(
      "the flood gets its budget and no more, writes no quote, and the other tenant's every request is answered",
      { timeout: 180_000 },
      async () => {
        database = await createTestDatabase();
        service = await startService({
          DATA_DIR: path.join(mkdtempSync(path.join(tmpdir(), 'bds-flood-')), 'data'),
          DATABASE_URL: database.url ?? '',
          PLATFORM_API_KEY: platformKey,
          QUOTE_TTL_SECONDS: '600',
        });
        const floodKeys = await tenant('Lote Sin Fondos', 2, 0);
        const [other = ''] = await tenant('Remesas Vecinas', 1, 1_000_000_000_000);
        const body = JSON.stringify({
          items: Array.from({ length: ITEMS }, (_, i) => ({
            reference: `flood-${i}`,
            deliver: { asset: 'BS', amount: 150_000 },
            method: 'pago_movil',
            beneficiary: beneficiary('V99990001'),
            sender: SENDER,
          })),
        });

        const latency = {
          alone: { read: [] as number[], payout: [] as number[] },
          flood: { read: [] as number[], payout: [] as number[] },
        };
        const flood = { batches: 0, refused429: 0 };
        let quoteIds: string[] = [];
        for (let i = 0; i < 20; i += 1)
          quoteIds.push(
            (await call('POST', '/v1/quotes', other, { deliver: { asset: 'BS', amount: 150_000 } })).body.id,
          );

        for (const phase of PHASES) {
          const ends = Date.now() + PHASE_MS;
          const flooders =
            phase === 'flood'
              ? floodKeys.map(async (key) => {
                  while (Date.now() < ends) {
                    const answer = await call('POST', '/v1/payout-batches', key, body, {
                      'idempotency-key': idempotencyKey(),
                    });
                    if (answer.status === 422) {
                      flood.batches += 1;
                      assert.equal(answer.body.error.code, 'insufficient_tenant_funds');
                    } else {
                      assert.equal(answer.status, 429, JSON.stringify(answer.body).slice(0, 300));
                      flood.refused429 += 1;
                      await new Promise((resolve) =>
                        setTimeout(
                          resolve,
                          Math.min(ends - Date.now(), Number(answer.headers.get('retry-after')) * 1000),
                        ),
                      );
                    }
                  }
                })
              : [];
          while (Date.now() < ends) {
            let started = performance.now();
            const read = await call('GET', '/v1/payments?limit=1', other);
            latency[phase].read.push(performance.now() - started);
            assert.equal(read.status, 200);
            if (quoteIds.length === 0)
              quoteIds = [
                (await call('POST', '/v1/quotes', other, { deliver: { asset: 'BS', amount: 150_000 } })).body.id,
              ];
            started = performance.now();
            const paid = await call(
              'POST',
              '/v1/payouts',
              other,
              { quoteId: quoteIds.pop(), method: 'pago_movil', sender: SENDER, beneficiary: beneficiary('V99990001') },
              { 'idempotency-key': idempotencyKey() },
            );
            latency[phase].payout.push(performance.now() - started);
            assert.equal(paid.status, 201, JSON.stringify(paid.body));
          }
          await Promise.all(flooders);
        }

        const figures = Object.fromEntries(
          (['read', 'payout'] as const).map((kind) => [
            kind,
            {
              alone: p99(latency.alone[kind]),
              flood: p99(latency.flood[kind]),
              samples: [latency.alone[kind].length, latency.flood[kind].length],
            },
          ]),
        );
        console.log(
          `flood: ${flood.batches} batches of ${ITEMS} refused items answered, ${flood.refused429} answered 429; other tenant p99 (ms): ${JSON.stringify(figures)}`,
        );
        // Per key and flood phase: one full batch at once, then one per second of refill (and the tenant's 2,000 a second allows both keys that).
        const floodSeconds = (PHASES.filter((p) => p === 'flood').length * PHASE_MS) / 1000;
        const allowed =
          floodKeys.length * (PHASES.filter((p) => p === 'flood').length + BATCHES_PER_KEY_PER_S * floodSeconds);
        assert.ok(flood.batches <= allowed, `the flood got ${flood.batches} batches, its budget allows ${allowed}`);
        assert.ok(flood.refused429 > 0, 'the flood was held back');
        const written = await database!.db.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM quotes q JOIN tenants t ON t.id = q.tenant_id WHERE t.name = 'Lote Sin Fondos'`,
        );
        assert.equal(written.rows[0]!.n, '0', 'no quote for an item that cannot pay');
      },
    );
  },
);
