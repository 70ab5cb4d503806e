// A bank that goes down for a minute and comes back, through the HTTP bank connector, with real
// processes (the service as `npm start` runs it, the gateway simulator in its own) and the DEFAULT
// breaker settings: no payout fails; each one is sent once and resolves once the bank is back, the
// ones that arrived while the breaker was open having waited `pending`. Then the same outage past
// the rail queue's bound: each waiting payout fails `bank_unreachable` with its money back.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { generateApiKey } from '../../src/domain/api-keys.ts';
import { connectorConfigOf, startGatewaySimulator, type GatewaySimulator } from '../support/gateway-simulator.ts';
import { createTestDatabase, ENGINE, type TestDatabase } from '../support/harness.ts';
import { SENDER, beneficiary, idempotencyKey } from '../support/payouts.ts';
import { startService, type ServiceProcess } from '../support/process.ts';
import { until } from '../support/until.ts';

/** How long the bank is down in the first case. */
const OUTAGE_MS = 60_000;
/** A payout every this often while it is down. */
const PACE_MS = 2_000;
/** After the bank is back: the breaker's open while (30 s by default) plus a loaded machine's margin. */
const RESOLVE_BOUND_MS = 90_000;
/** The rail queue's bound in the second case: short, so that the test sees it pass. */
const QUEUE_MAX_AGE_S = 8;
const DELIVER = 1_000_000;

interface Running {
  sim: GatewaySimulator;
  service: ServiceProcess;
  database?: TestDatabase;
}

describe(`a bank that is down, then back, through the HTTP connector (default breaker) on ${ENGINE}`, () => {
  const platformKey = generateApiKey('platform');
  const running: Running[] = [];

  after(async () => {
    for (const r of running) {
      await r.service.stop('SIGTERM').catch(() => undefined);
      await r.sim.close();
      await r.database?.drop();
    }
  });

  async function start(env: Record<string, string> = {}): Promise<Running> {
    const sim = await startGatewaySimulator({ settleDelayMs: 100 });
    const connector = connectorConfigOf(sim);
    const railsFile = path.join(sim.dir, 'service-rails.json');
    writeFileSync(railsFile, JSON.stringify({ connectors: [connector] }), { mode: 0o600 });
    const database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    const service = await startService({
      DATA_DIR: path.join(mkdtempSync(path.join(tmpdir(), 'bds-outage-')), 'data'),
      DATABASE_URL: database?.url ?? '',
      PLATFORM_API_KEY: platformKey,
      RAILS_FILE: railsFile,
      SANDBOX_RAIL_TIMEOUT_MS: '1000',
      REAPER_INTERVAL_MS: '200',
      ...env,
    });
    await sim.control('POST', '/_control/callbacks', {
      url: `${service.baseUrl}/v1/rails/${connector.name}/callbacks`,
    });
    const r = { sim, service, database };
    running.push(r);
    return r;
  }

  async function call(
    r: Running,
    method: string,
    route: string,
    key: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) {
    const answer = await fetch(`${r.service.baseUrl}${route}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: answer.status, body: (await answer.json()) as any };
  }

  async function liveTenant(r: Running): Promise<string> {
    const tenant = await call(r, 'POST', '/v1/admin/tenants', platformKey, { name: 'Remesas Caídas' });
    assert.equal(tenant.status, 201, JSON.stringify(tenant.body));
    const key = await call(r, 'POST', `/v1/admin/tenants/${tenant.body.id}/api-keys`, platformKey, { mode: 'live' });
    assert.equal(key.status, 201, JSON.stringify(key.body));
    const funded = await call(
      r,
      'POST',
      `/v1/admin/tenants/${tenant.body.id}/fundings`,
      platformKey,
      { mode: 'live', asset: 'BS', amount: 1_000_000_000 },
      { 'idempotency-key': idempotencyKey() },
    );
    assert.equal(funded.status, 201, JSON.stringify(funded.body));
    return key.body.key;
  }

  async function pay(r: Running, key: string, i: number) {
    const quote = await call(r, 'POST', '/v1/quotes', key, { deliver: { asset: 'BS', amount: DELIVER } });
    assert.equal(quote.status, 201, JSON.stringify(quote.body));
    const nationalId = `V3200${String(i).padStart(4, '0')}`;
    const made = await call(
      r,
      'POST',
      '/v1/payouts',
      key,
      { quoteId: quote.body.id, method: 'pago_movil', sender: SENDER, beneficiary: beneficiary(nationalId) },
      { 'idempotency-key': idempotencyKey() },
    );
    assert.equal(made.status, 201, JSON.stringify(made.body));
    return made.body as { id: string; status: string; totalDebited?: string };
  }

  const shown = async (r: Running, key: string, id: string) =>
    (await call(r, 'GET', `/v1/payments/${id}`, key)).body as { status: string; status_reason: string | null };
  const balance = async (r: Running, key: string) =>
    BigInt((await call(r, 'GET', '/v1/treasury/position', key)).body.prefundingBalance);

  it(
    'down for a minute: no payout fails; the ones that waited are sent once the bank is back, each once, and settle',
    { timeout: OUTAGE_MS + RESOLVE_BOUND_MS + 60_000 },
    async () => {
      const r = await start();
      const key = await liveTenant(r);
      await r.sim.stop('SIGKILL');
      const made: Array<{ id: string; status: string }> = [];
      const downAt = Date.now();
      for (let i = 0; Date.now() - downAt < OUTAGE_MS; i += 1) {
        made.push(await pay(r, key, i));
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, downAt + (i + 1) * PACE_MS - Date.now())));
      }
      const answered = made.reduce<Record<string, number>>(
        (n, p) => ({ ...n, [p.status]: (n[p.status] ?? 0) + 1 }),
        {},
      );
      assert.equal(answered.failed ?? 0, 0, `no payout fails while the bank is down: ${JSON.stringify(answered)}`);
      assert.ok(
        (answered.pending ?? 0) > 0,
        `the breaker opened and later payouts waited: ${JSON.stringify(answered)}`,
      );

      await r.sim.restart();
      const backAt = Date.now();
      await until(
        'every payout settled after the bank came back',
        async () => {
          for (const p of made) if ((await shown(r, key, p.id)).status !== 'settled') return false;
          return true;
        },
        { timeoutMs: RESOLVE_BOUND_MS, intervalMs: 500 },
      );
      for (const p of made) {
        const transfer = await r.sim.control('GET', `/_control/transfers/${p.id}`);
        assert.equal(transfer.submissions, 1, `payment ${p.id} (answered ${p.status}) sent once`);
      }
      console.log(
        `outage ${OUTAGE_MS} ms: ${made.length} payouts answered ${JSON.stringify(answered)}; all settled ${Date.now() - backAt} ms after the bank was back`,
      );
    },
  );

  it(
    'down past RAIL_QUEUE_MAX_AGE_S: every waiting payout fails bank_unreachable with its money back; the ones sent resolve once the bank is back',
    { timeout: 120_000 },
    async () => {
      const r = await start({ RAIL_QUEUE_MAX_AGE_S: String(QUEUE_MAX_AGE_S) });
      const key = await liveTenant(r);
      const before = await balance(r, key);
      await r.sim.stop('SIGKILL');
      const made: Array<{ id: string; status: string; totalDebited?: string }> = [];
      // Refused sends open the breaker; then payouts wait.
      for (let i = 0; made.filter((p) => p.status === 'pending').length < 5 && i < 50; i += 1)
        made.push(await pay(r, key, i));
      const waiting = made.filter((p) => p.status === 'pending');
      const sent = made.filter((p) => p.status !== 'pending');
      assert.equal(waiting.length, 5, JSON.stringify(made.map((p) => p.status)));
      assert.equal(made.filter((p) => p.status === 'failed').length, 0);

      await until(
        'every waiting payout failed past the queue bound',
        async () => {
          for (const p of waiting) if ((await shown(r, key, p.id)).status !== 'failed') return false;
          return true;
        },
        { timeoutMs: QUEUE_MAX_AGE_S * 1000 + 30_000, intervalMs: 500 },
      );
      for (const p of waiting) assert.equal((await shown(r, key, p.id)).status_reason, 'bank_unreachable');
      const stillCharged = sent.reduce((sum, p) => sum + BigInt(p.totalDebited ?? '0'), 0n);
      assert.equal(
        await balance(r, key),
        before - stillCharged,
        'the waiting payouts gave everything back; the sent ones are still charged',
      );

      await r.sim.restart();
      await until(
        'the payouts sent before the breaker opened resolved',
        async () => {
          for (const p of sent) if ((await shown(r, key, p.id)).status !== 'settled') return false;
          return true;
        },
        { timeoutMs: RESOLVE_BOUND_MS, intervalMs: 500 },
      );
      for (const p of waiting)
        assert.equal(
          (await r.sim.control('GET', `/_control/transfers`)).data.some(
            (t: { reference: string }) => t.reference === p.id,
          ),
          false,
          'a failed waiting payout never reached the bank',
        );
    },
  );
});
